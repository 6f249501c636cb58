# The dependency table of docs/architecture.md against the CMake link lines
# and the headers each part owns.
add_test(NAME unit.arch.deps
         COMMAND ${MUSTER_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/arch/check_deps.py ${CMAKE_SOURCE_DIR})
# The lists of common/lists.h (states, dependency types, end reasons, limits)
# against SQL, OpenAPI, proto comments and docs/api.md.
add_test(NAME unit.arch.lists
         COMMAND ${MUSTER_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/arch/check_lists.py ${CMAKE_SOURCE_DIR})
