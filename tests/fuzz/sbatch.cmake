# The #SBATCH reader, output patterns and Slurm time forms (common/sbatch.c, common/slurmtime.c).
muster_fuzz_driver(NAME fuzz_sbatch TEST fuzz.sbatch
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/fuzz_sbatch.c
  LIBS muster_common
  CORPUS ${CMAKE_CURRENT_LIST_DIR}/corpus/sbatch)
