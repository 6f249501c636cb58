# The REST router (api/ops/ops_router.c): paths and queries.
muster_fuzz_driver(NAME fuzz_router TEST fuzz.router
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/fuzz_router.c ${CMAKE_CURRENT_LIST_DIR}/../../api/ops/ops_router.c
          ${CMAKE_CURRENT_LIST_DIR}/../../api/jv.c
  INCLUDES ${CMAKE_CURRENT_LIST_DIR}/../../api ${CMAKE_CURRENT_LIST_DIR}/../../api/ops
  LIBS muster_common PkgConfig::JANSSON
  CORPUS ${CMAKE_CURRENT_LIST_DIR}/corpus/router)
