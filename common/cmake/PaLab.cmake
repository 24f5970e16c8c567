# pa_add_lab(<NN-name> [SIMT] [EXTRA_LIBS <targets>...])
#
# Builds one lab's test executable `labNN` from labs/<NN-name>/test_lab.cpp and the file that
# LAB_IMPL picks: labs/<NN-name>/starter.cpp or solutions/<NN-name>/solution.cpp. Every GoogleTest
# test becomes its own ctest test (one process each, so one crash cannot hide the others), named
# labNN.Suite.Test. Tests in suites whose name ends in "Checks" test the given argument checks,
# which pass under the starter too: they get the label `checks`; all others get `labNN`.
#
# SIMT marks a lab whose implementation file is CUDA C++ (it includes "simt/cuda.hpp"). That file
# is always compiled as C++ against the SIMT emulator (pa_simt). When the top level found a CUDA
# compiler (PA_CUDA_BACKEND) it is compiled a second time, as CUDA for sm_80 and sm_90,
# through a generated .cu that #includes it; the executable then gets PA_HAVE_CUDA_BACKEND=1 and
# the CUDA runtime, and its tests run on both backends (on CUDA only where a device is present).
#
# Beside the tests, when the room has them:
#   bench_lab.cpp      -> `labNN_bench`, a Google Benchmark program built from the same file
#                         LAB_IMPL picks, so a student times their own code (PA_BENCHMARKS).
#   solutions/<NN-name>/mutants/*.cpp (PA_MUTANTS) -> `labNN_mutant_<stem>`, the graded tests
#                         linked against one deliberately broken implementation each; the target
#                         `labNN_mutants` builds them all. They are not ctest tests: they are
#                         meant to fail, and tools/lab mutants reads which tests kill each one.
include(GoogleTest)

set(PA_TEST_TIMEOUT 60 CACHE STRING "Per-test timeout in seconds")
set(PA_LABS "" CACHE STRING "Lab numbers to build, e.g. '01;03' (empty: every lab)")

function(pa_add_lab lab_dir)
  cmake_parse_arguments(ARG "SIMT" "" "EXTRA_LIBS" ${ARGN})
  string(SUBSTRING "${lab_dir}" 0 2 lab_number)
  if(PA_LABS AND NOT lab_number IN_LIST PA_LABS)
    return()
  endif()
  set(target "lab${lab_number}")
  set(room "${PROJECT_SOURCE_DIR}/labs/${lab_dir}")
  if(LAB_IMPL STREQUAL "solution")
    set(impl "${PROJECT_SOURCE_DIR}/solutions/${lab_dir}/solution.cpp")
  else()
    set(impl "${room}/starter.cpp")
  endif()
  if(NOT EXISTS "${impl}")
    message(FATAL_ERROR "${target}: ${impl} does not exist (LAB_IMPL=${LAB_IMPL})")
  endif()

  add_executable(${target} "${room}/test_lab.cpp" "${impl}")
  target_include_directories(${target} PRIVATE "${room}")
  target_link_libraries(${target} PRIVATE pa_testing ${ARG_EXTRA_LIBS})
  target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:${PA_WARNING_FLAGS}>)
  if(ARG_SIMT)
    _pa_add_simt_backends(${target} "${impl}")
  endif()

  gtest_discover_tests(${target}
    TEST_PREFIX "${target}."
    TEST_FILTER "-*Checks.*"
    PROPERTIES LABELS "${target}" TIMEOUT ${PA_TEST_TIMEOUT}
    DISCOVERY_TIMEOUT 30)
  gtest_discover_tests(${target}
    TEST_PREFIX "${target}."
    TEST_FILTER "*Checks.*"
    PROPERTIES LABELS "checks" TIMEOUT ${PA_TEST_TIMEOUT}
    DISCOVERY_TIMEOUT 30)

  if(PA_BENCHMARKS AND EXISTS "${room}/bench_lab.cpp")
    add_executable(${target}_bench "${room}/bench_lab.cpp" "${impl}")
    target_include_directories(${target}_bench PRIVATE "${room}")
    target_link_libraries(${target}_bench PRIVATE pa_testing benchmark::benchmark
                          ${ARG_EXTRA_LIBS})
    target_compile_options(${target}_bench PRIVATE
      $<$<COMPILE_LANGUAGE:CXX>:${PA_WARNING_FLAGS}>)
    if(ARG_SIMT)
      _pa_add_simt_backends(${target}_bench "${impl}")
    endif()
  endif()

  file(GLOB mutants CONFIGURE_DEPENDS
       "${PA_MUTANT_SOURCES}/${lab_dir}/*.cpp")
  if(PA_MUTANTS AND mutants)
    # The test file is compiled once and linked against every mutant. Mutants run on the
    # emulator only (the CUDA twins would skip without a GPU anyway).
    add_library(${target}_mutant_tests OBJECT "${room}/test_lab.cpp")
    target_include_directories(${target}_mutant_tests PRIVATE "${room}")
    target_link_libraries(${target}_mutant_tests PRIVATE pa_testing ${ARG_EXTRA_LIBS})
    add_custom_target(${target}_mutants)
    foreach(mutant IN LISTS mutants)
      get_filename_component(stem "${mutant}" NAME_WE)
      set(exe ${target}_mutant_${stem})
      add_executable(${exe} EXCLUDE_FROM_ALL "${mutant}")
      target_include_directories(${exe} PRIVATE "${room}")
      target_link_libraries(${exe} PRIVATE ${target}_mutant_tests pa_testing ${ARG_EXTRA_LIBS})
      target_compile_options(${exe} PRIVATE ${PA_WARNING_FLAGS})  # no warning the solution lacks
      if(ARG_SIMT)
        target_link_libraries(${exe} PRIVATE pa_simt)
        target_compile_options(${exe} PRIVATE -Wno-unknown-pragmas)
      endif()
      add_dependencies(${target}_mutants ${exe})
    endforeach()
    if(ARG_SIMT)
      target_link_libraries(${target}_mutant_tests PRIVATE pa_simt)
    endif()
  endif()
endfunction()

# The two builds of a SIMT lab's implementation (see SIMT above).
function(_pa_add_simt_backends target impl)
  target_link_libraries(${target} PRIVATE pa_simt)
  # `#pragma unroll` speaks to nvcc; the host compilers would warn about every one of them.
  target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-Wno-unknown-pragmas>)
  # Not CMAKE_CUDA_COMPILER: it stays in the cache when a build folder is re-configured with
  # PA_CUDA=OFF, while the CUDA language and toolkit are then not set up.
  if(NOT PA_CUDA_BACKEND)
    return()
  endif()
  set(cu "${CMAKE_CURRENT_BINARY_DIR}/${target}_cuda_backend.cu")
  file(CONFIGURE OUTPUT "${cu}" CONTENT
       "// Generated by pa_add_lab(... SIMT): the CUDA backend's build of\n#include \"${impl}\"\n")
  target_sources(${target} PRIVATE "${cu}")
  target_compile_definitions(${target} PRIVATE PA_HAVE_CUDA_BACKEND=1)
  # Eigen (pulled in by pa/checks.hpp) annotates host code for nvcc; these keep its notes quiet.
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CUDA>:--expt-relaxed-constexpr --diag-suppress=20012,20013,20015>)
  set_target_properties(${target} PROPERTIES
    CUDA_ARCHITECTURES "80;90"
    CUDA_STANDARD 20
    CUDA_STANDARD_REQUIRED ON
    CUDA_RUNTIME_LIBRARY Shared)
  target_link_libraries(${target} PRIVATE CUDA::cudart)
endfunction()
