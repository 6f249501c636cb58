# The muster CLI's pure parts: argument parsing, config file, output.
add_executable(test_cli_args ${CMAKE_CURRENT_LIST_DIR}/cli/test_cli_args.c)
target_link_libraries(test_cli_args muster_cli PkgConfig::CMOCKA)
add_test(NAME unit.cli.args COMMAND test_cli_args)
