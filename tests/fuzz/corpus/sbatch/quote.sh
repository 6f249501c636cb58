#SBATCH --job-name "unterminated
