# Slurm compatibility: #SBATCH directives, output patterns, Slurm time forms (common/).
add_executable(test_sbatch ${CMAKE_CURRENT_LIST_DIR}/common/test_sbatch.c)
target_link_libraries(test_sbatch muster_common PkgConfig::CMOCKA)
add_test(NAME unit.common.sbatch COMMAND test_sbatch)
# The CLI's sbatch side: scripts, Slurm options, --wait exit codes.
add_executable(test_cli_slurm ${CMAKE_CURRENT_LIST_DIR}/cli/test_cli_slurm.c)
target_link_libraries(test_cli_slurm muster_cli PkgConfig::CMOCKA)
add_test(NAME unit.cli.slurm COMMAND test_cli_slurm)
# The API's `script` field (api/codec_script.c through the job codec).
add_executable(test_api_codec_script ${CMAKE_CURRENT_LIST_DIR}/api/test_codec_script.c)
target_link_libraries(test_api_codec_script muster_api_codec muster_common PkgConfig::CMOCKA)
add_test(NAME unit.api.codec_script COMMAND test_api_codec_script)
# srun for batch scripts: its options, the step it plans (agent/srun/), and
# the agent's reading of the API's script runner (agent/launch.c).
add_executable(test_srun ${CMAKE_CURRENT_LIST_DIR}/agent/test_srun.c)
target_link_libraries(test_srun muster_srun_opts muster_agent_core muster_api_codec muster_common
  PkgConfig::CMOCKA)
add_test(NAME unit.agent.srun COMMAND test_srun)
set_tests_properties(unit.agent.srun PROPERTIES TIMEOUT 30 LABELS agent)
