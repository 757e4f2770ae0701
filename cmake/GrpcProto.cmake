# fieldbrain_grpc_proto(TARGET PROTO_ROOT PROTO...): a static library of the protobuf messages and
# gRPC stubs generated from PROTO... (paths relative to PROTO_ROOT), with the generated headers on
# its public include path as "<dir>/<name>.pb.h" and "<dir>/<name>.grpc.pb.h".
function(fieldbrain_grpc_proto target root)
  set(out ${CMAKE_CURRENT_BINARY_DIR}/gen)
  set(srcs)
  set(hdrs)
  foreach(proto ${ARGN})
    get_filename_component(dir ${proto} DIRECTORY)
    get_filename_component(name ${proto} NAME_WE)
    file(MAKE_DIRECTORY ${out}/${dir})
    set(base ${out}/${dir}/${name})
    add_custom_command(
      OUTPUT ${base}.pb.cc ${base}.pb.h ${base}.grpc.pb.cc ${base}.grpc.pb.h
      COMMAND protobuf::protoc
        --proto_path=${root}
        --cpp_out=${out}
        --grpc_out=${out}
        --plugin=protoc-gen-grpc=$<TARGET_FILE:gRPC::grpc_cpp_plugin>
        ${root}/${proto}
      DEPENDS ${root}/${proto}
      COMMENT "protoc ${proto}")
    list(APPEND srcs ${base}.pb.cc ${base}.grpc.pb.cc)
    list(APPEND hdrs ${base}.pb.h ${base}.grpc.pb.h)
  endforeach()
  add_library(${target} ${srcs} ${hdrs})
  target_include_directories(${target} PUBLIC $<BUILD_INTERFACE:${out}>)
  target_link_libraries(${target} PUBLIC protobuf::libprotobuf gRPC::grpc++)
endfunction()
