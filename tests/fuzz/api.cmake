# The job body decoder (api/jv.c + api/codec_job.c).
muster_fuzz_driver(NAME fuzz_job_json TEST fuzz.job_json
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/fuzz_job_json.c
          ${CMAKE_CURRENT_LIST_DIR}/../../api/jv.c ${CMAKE_CURRENT_LIST_DIR}/../../api/codec_job.c
          ${CMAKE_CURRENT_LIST_DIR}/../../api/codec_script.c
  INCLUDES ${CMAKE_CURRENT_LIST_DIR}/../../api ${CMAKE_CURRENT_LIST_DIR}/../../store
  LIBS muster_common PkgConfig::JANSSON
  CORPUS ${CMAKE_CURRENT_LIST_DIR}/corpus/job_json)
