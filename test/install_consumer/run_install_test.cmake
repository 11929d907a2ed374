# ctest driver (cmake -P): install the bcsr24 package from the build tree into a fresh prefix, then configure,
# build and run the outside project in this folder against it. Needs no GPU.
# Inputs (-D): BUILD_DIR, SOURCE_DIR (this folder), WORK_DIR, GENERATOR, CXX_COMPILER, BUILD_TYPE,
#              CUDA_ROOT, ZLIB_INCLUDE_DIR, ZLIB_LIBRARY (the last three as the main build found them),
#              DISTRIBUTED_BUILT (1 when the build has bcsr24_distributed, 0 otherwise).
foreach(var BUILD_DIR SOURCE_DIR WORK_DIR GENERATOR CXX_COMPILER)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "run_install_test.cmake: ${var} not set")
  endif()
endforeach()

function(run_step name)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
  message("${out}${err}")
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "install test: ${name} failed (${status})")
  endif()
endfunction()

set(prefix "${WORK_DIR}/prefix")
set(consumer_build "${WORK_DIR}/build")
file(REMOVE_RECURSE "${prefix}" "${consumer_build}")

# Only the library's component: the test must not depend on the apps being built.
set(config_args "")
if(BUILD_TYPE)
  set(config_args --config "${BUILD_TYPE}")
endif()
run_step("install" ${CMAKE_COMMAND} --install "${BUILD_DIR}" --prefix "${prefix}" --component bcsr24_development
         ${config_args})

# The NCCL operator's headers are installed exactly when its library is.
foreach(header distributed.hpp distributed_operator.hpp)
  if(EXISTS "${prefix}/include/bcsr24/${header}")
    set(installed 1)
  else()
    set(installed 0)
  endif()
  if(DEFINED DISTRIBUTED_BUILT AND NOT installed EQUAL DISTRIBUTED_BUILT)
    message(FATAL_ERROR "install test: bcsr24/${header} installed = ${installed}, bcsr24_distributed built = "
                        "${DISTRIBUTED_BUILT}")
  endif()
endforeach()
# The halo exchange is the library's own (lib/src/distributed), never installed.
if(EXISTS "${prefix}/include/bcsr24/halo_exchange.hpp")
  message(FATAL_ERROR "install test: bcsr24/halo_exchange.hpp installed; it is internal")
endif()
if(NOT EXISTS "${prefix}/include/bcsr24/sparse_operator.hpp")
  message(FATAL_ERROR "install test: bcsr24/sparse_operator.hpp not installed")
endif()

set(configure_args -S "${SOURCE_DIR}" -B "${consumer_build}" -G "${GENERATOR}"
    "-DCMAKE_PREFIX_PATH=${prefix}" "-DCMAKE_CXX_COMPILER=${CXX_COMPILER}" "-DCMAKE_BUILD_TYPE=${BUILD_TYPE}")
# Point the consumer at the same CUDA toolkit and zlib as the main build (they may be outside default paths).
if(CUDA_ROOT)
  list(APPEND configure_args "-DCUDAToolkit_ROOT=${CUDA_ROOT}")
endif()
if(ZLIB_INCLUDE_DIR AND ZLIB_LIBRARY)
  list(APPEND configure_args "-DZLIB_INCLUDE_DIR=${ZLIB_INCLUDE_DIR}" "-DZLIB_LIBRARY=${ZLIB_LIBRARY}")
endif()
run_step("configure" ${CMAKE_COMMAND} ${configure_args})
run_step("build" ${CMAKE_COMMAND} --build "${consumer_build}" ${config_args})

find_program(consumer_exe consumer PATHS "${consumer_build}" "${consumer_build}/${BUILD_TYPE}" NO_DEFAULT_PATH)
if(NOT consumer_exe)
  message(FATAL_ERROR "install test: consumer executable not found in ${consumer_build}")
endif()
run_step("run" "${consumer_exe}")

find_program(solver_consumer_exe solver_consumer PATHS "${consumer_build}" "${consumer_build}/${BUILD_TYPE}"
  NO_DEFAULT_PATH)
if(NOT solver_consumer_exe)
  message(FATAL_ERROR "install test: solver_consumer executable not found in ${consumer_build}")
endif()
run_step("run solver consumer" "${solver_consumer_exe}")
