# Slurm compatibility: #SBATCH directives, output patterns, Slurm time forms (common/).
add_executable(test_sbatch ${CMAKE_CURRENT_LIST_DIR}/common/test_sbatch.c)
target_link_libraries(test_sbatch muster_common PkgConfig::CMOCKA)
add_test(NAME unit.common.sbatch COMMAND test_sbatch)
