# The dependency table of docs/architecture.md against the CMake link lines
# and the headers each part owns.
add_test(NAME unit.arch.deps
         COMMAND ${MUSTER_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/arch/check_deps.py ${CMAKE_SOURCE_DIR})
