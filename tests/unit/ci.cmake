# The CI's own checks (skip allow-list).
add_test(NAME unit.ci.check_skips
         COMMAND /usr/bin/python3 ${CMAKE_CURRENT_LIST_DIR}/ci/test_check_skips.py)
