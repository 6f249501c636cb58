# The `muster-sim --fairshare` JSON reader (service/sim/fairshare_cli.c) and
# the Fair Tree core behind it; the replay also runs the unit golden cases.
muster_fuzz_driver(NAME fuzz_fairshare_json TEST fuzz.fairshare_json
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/fuzz_fairshare_json.c
          ${CMAKE_CURRENT_LIST_DIR}/../../service/sched/fairtree.c
          ${CMAKE_CURRENT_LIST_DIR}/../../service/sim/fairshare_cli.c
  INCLUDES ${CMAKE_CURRENT_LIST_DIR}/../../service/sched ${CMAKE_CURRENT_LIST_DIR}/../../service/sim
  LIBS muster_common PkgConfig::JANSSON m
  CORPUS ${CMAKE_CURRENT_LIST_DIR}/corpus/fairshare
         ${CMAKE_CURRENT_LIST_DIR}/../unit/fairtree/cases
         ${CMAKE_CURRENT_LIST_DIR}/../unit/fairtree/cases/bad)
