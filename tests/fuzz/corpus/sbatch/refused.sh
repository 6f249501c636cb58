#SBATCH --constraint=x
