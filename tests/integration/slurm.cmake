# Slurm workflows from the CLI: batch scripts with #SBATCH, the REST script
# field, submit --wait exit codes and a wait across an API restart (fake
# GPUs, real muster-api + scheduler + agent).
muster_py_test(slurm.cli.e2e test_slurm_cli.py TIMEOUT 240 COST 25 LABELS cli agent)
# srun in batch scripts (agent/srun/): steps in a two-node job, errors, --batch-host.
muster_py_test(slurm.srun test_slurm_srun.py TIMEOUT 240 LABELS cli agent)
