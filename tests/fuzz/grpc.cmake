# What muster-api's gRPC server does with untrusted bytes: protobuf-c
# unpacking of every request type; JobSpec -> REST JSON -> codec_job_decode;
# the admin writes -> REST JSON -> codec_admin decoders.
muster_fuzz_driver(NAME fuzz_grpc_proto TEST fuzz.grpc_proto
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/fuzz_grpc_proto.c
          ${CMAKE_CURRENT_LIST_DIR}/../../api/grpc/grpc_codec.c
          ${CMAKE_CURRENT_LIST_DIR}/../../api/jv.c ${CMAKE_CURRENT_LIST_DIR}/../../api/codec_job.c
          ${CMAKE_CURRENT_LIST_DIR}/../../api/codec_script.c
          ${CMAKE_CURRENT_LIST_DIR}/../../api/codec_admin.c
  INCLUDES ${CMAKE_CURRENT_LIST_DIR}/../../api ${CMAKE_CURRENT_LIST_DIR}/../../api/grpc
           ${CMAKE_CURRENT_LIST_DIR}/../../store
  LIBS muster_proto muster_common PkgConfig::JANSSON
  CORPUS ${CMAKE_CURRENT_LIST_DIR}/corpus/grpc_proto)
