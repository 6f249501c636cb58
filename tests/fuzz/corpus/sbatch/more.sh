#SBATCH --export=NONE,A=b --mem=4G --cpus-per-task=2 --ntasks-per-node=4
#SBATCH --dependency=afterok:1:2,afternotok:3 -H --qos=high -A t
