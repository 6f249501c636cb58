#!/bin/bash
#SBATCH -N 2-4 --gres=gpu:a100:8
#SBATCH -t 1:00:00 -J "x y" -o slurm-%j.out
#SBATCH --array=0-15%4 --begin=now+1hour --signal=B:USR1@60
echo hi
