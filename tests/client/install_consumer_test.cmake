# Installs the brain_client package from the build tree into a scratch prefix, then configures,
# builds and runs tests/client/consumer against it with find_package(brain_client). Fails when the
# consumer links anything of the engine or CUDA.
# -D: BUILD_DIR, CONSUMER_SRC, WORK, GENERATOR, CXX
file(REMOVE_RECURSE ${WORK})
set(prefix ${WORK}/prefix)

function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}\n${out}")
  endif()
  set(last_output "${out}" PARENT_SCOPE)
endfunction()

run(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix} --component brain_client)
foreach(f lib/cmake/brain_client/brain_clientConfig.cmake
          lib/cmake/brain_client/brain_clientConfigVersion.cmake
          lib/cmake/brain_client/brain_clientTargets.cmake
          include/fieldbrain/client/brain_client.h
          include/brain/v1/brain.grpc.pb.h)
  if(NOT EXISTS ${prefix}/${f})
    message(FATAL_ERROR "not installed: ${f}")
  endif()
endforeach()

run(${CMAKE_COMMAND} -S ${CONSUMER_SRC} -B ${WORK}/build -G ${GENERATOR}
    -DCMAKE_CXX_COMPILER=${CXX} -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH=${prefix})
run(${CMAKE_COMMAND} --build ${WORK}/build)

# What the consumer was linked with, in CMake's own record of the link line.
file(GLOB_RECURSE link_files ${WORK}/build/CMakeFiles/consumer.dir/link.txt
     ${WORK}/build/CMakeFiles/consumer.dir/build.make ${WORK}/build/build.ninja)
foreach(f ${link_files})
  file(READ ${f} text)
  string(TOLOWER "${text}" text)
  foreach(bad cudart libcuda cufft fieldbrain_engine fieldbrain_model fieldbrain_cuda)
    if(text MATCHES "${bad}")
      message(FATAL_ERROR "consumer links ${bad} (${f})")
    endif()
  endforeach()
endforeach()
execute_process(COMMAND ldd ${WORK}/build/consumer OUTPUT_VARIABLE deps)
if(deps MATCHES "cuda|cufft")
  message(FATAL_ERROR "consumer depends on CUDA at run time:\n${deps}")
endif()

run(${WORK}/build/consumer)
if(NOT last_output MATCHES "consumer ok: link down")
  message(FATAL_ERROR "unexpected consumer output: ${last_output}")
endif()
message(STATUS "${last_output}")
