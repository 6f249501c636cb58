# The admin body codecs (api/codec_admin.c).
muster_fuzz_driver(NAME fuzz_admin_json TEST fuzz.admin_json
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/fuzz_admin_json.c ${CMAKE_CURRENT_LIST_DIR}/../../api/codec_admin.c
  INCLUDES ${CMAKE_CURRENT_LIST_DIR}/../../api ${CMAKE_CURRENT_LIST_DIR}/../../store
  LIBS muster_common PkgConfig::JANSSON
  CORPUS ${CMAKE_CURRENT_LIST_DIR}/corpus/admin_json)
