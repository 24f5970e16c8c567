# pa_add_lab(<NN-name> [SIMT] [EXTRA_LIBS <targets>...] [BENCH_LIBS <targets>...])
#
# Every room has the same shape, and each file has one target:
#   labs/<NN-name>/starter.cpp or solutions/<NN-name>/solution.cpp (LAB_IMPL picks)
#                                  -> labNN_impl, a static library of the lab's functions
#   labs/<NN-name>/test_lab.cpp    -> labNN, the graded tests              (ctest label labNN)
#   labs/<NN-name>/test_checks.cpp -> labNN_checks, the given checks' tests (ctest label checks)
#   labs/<NN-name>/bench_lab.cpp   -> labNN_bench, Google Benchmark (PA_BENCHMARKS; optional)
#   labs/<NN-name>/given/          code the student reads and does not edit
# Every GoogleTest test is its own ctest test named labNN.Suite.Test (one process each, so a
# crash cannot hide the others).
#
# SIMT marks a CUDA lab: its implementation file holds CUDA C++ kernels and nothing else.
# given/launchers.cpp #includes it (the macro PA_LAB_IMPL names the file) and is compiled
# against the SIMT emulator (pa_simt), and, when the top level found nvcc (PA_CUDA_BACKEND),
# a second time as CUDA for sm_80 and sm_90 through a generated .cu; the library then carries
# PA_HAVE_CUDA_BACKEND=1 and its tests run on both backends (on CUDA only where a device is).
# Every other given/*.cpp is host code, compiled once.
#
# BENCH_LIBS: other labs' implementation libraries the benchmark times beside this lab's
# (lab 07 compares its kernel with labs 05 and 06).
#
# Mutants (PA_MUTANTS, instructors): every <stem>.cpp in ${PA_MUTANT_SOURCES}/<NN-name>/ (the
# solution with one bug applied, written there by tools/lab mutants) gives labNN_mutant_<stem>,
# the graded tests linked against it; target labNN_mutants builds them all. They are not ctest
# tests: they are meant to fail, and tools/lab reads which tests kill each one.
include(GoogleTest)

set(PA_TEST_TIMEOUT 60 CACHE STRING "Per-test timeout in seconds")
set(PA_LABS "" CACHE STRING "Lab numbers to build, e.g. '01;03' (empty: every lab)")
set(PA_MUTANT_SOURCES "${PROJECT_BINARY_DIR}/mutant-sources" CACHE PATH
    "Where tools/lab writes the mutants' sources, one folder per lab room")

function(pa_add_lab lab_dir)
  cmake_parse_arguments(ARG "SIMT" "" "EXTRA_LIBS;BENCH_LIBS" ${ARGN})
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
  set(simt_flag "")
  if(ARG_SIMT)
    set(simt_flag SIMT)
  endif()

  _pa_add_impl(${target}_impl "${impl}" "${room}" ${simt_flag} LIBS ${ARG_EXTRA_LIBS})

  foreach(kind IN ITEMS lab checks)
    if(kind STREQUAL "lab")
      set(exe ${target})
      set(label ${target})
    else()
      set(exe ${target}_checks)
      set(label checks)
    endif()
    add_executable(${exe} "${room}/test_${kind}.cpp")
    target_include_directories(${exe} PRIVATE "${room}")
    target_link_libraries(${exe} PRIVATE ${target}_impl pa_testing ${ARG_EXTRA_LIBS})
    target_compile_options(${exe} PRIVATE ${PA_WARNING_FLAGS})
    if(ARG_SIMT)
      target_link_libraries(${exe} PRIVATE pa_simt)
    endif()
    gtest_discover_tests(${exe}
      TEST_PREFIX "${target}."
      PROPERTIES LABELS "${label}" TIMEOUT ${PA_TEST_TIMEOUT}
      DISCOVERY_TIMEOUT 30)
  endforeach()

  set(bench_libs_built TRUE)
  foreach(lib IN LISTS ARG_BENCH_LIBS)
    if(NOT TARGET ${lib})
      set(bench_libs_built FALSE)  # PA_LABS left that lab out: no benchmark that compares with it
    endif()
  endforeach()
  if(PA_BENCHMARKS AND bench_libs_built AND EXISTS "${room}/bench_lab.cpp")
    add_executable(${target}_bench "${room}/bench_lab.cpp")
    target_include_directories(${target}_bench PRIVATE "${room}")
    target_link_libraries(${target}_bench PRIVATE ${target}_impl ${ARG_BENCH_LIBS} pa_testing
                          benchmark::benchmark ${ARG_EXTRA_LIBS})
    target_compile_options(${target}_bench PRIVATE ${PA_WARNING_FLAGS})
    if(ARG_SIMT)
      _pa_simt_source_options(${target}_bench)
    endif()
  endif()

  file(GLOB mutants CONFIGURE_DEPENDS "${PA_MUTANT_SOURCES}/${lab_dir}/*.cpp")
  if(PA_MUTANTS AND mutants)
    # The graded tests are compiled once and linked against every mutant. Mutants run on the
    # emulator only (the CUDA twins would skip without a GPU anyway).
    add_library(${target}_mutant_tests OBJECT "${room}/test_lab.cpp")
    target_include_directories(${target}_mutant_tests PRIVATE "${room}")
    target_link_libraries(${target}_mutant_tests PRIVATE pa_testing ${ARG_EXTRA_LIBS})
    if(ARG_SIMT)
      target_link_libraries(${target}_mutant_tests PRIVATE pa_simt)
    endif()
    add_custom_target(${target}_mutants)
    foreach(mutant IN LISTS mutants)
      get_filename_component(stem "${mutant}" NAME_WE)
      set(exe ${target}_mutant_${stem})
      _pa_add_impl(${exe}_impl "${mutant}" "${room}" ${simt_flag} EMULATOR_ONLY EXCLUDE_FROM_ALL
                   LIBS ${ARG_EXTRA_LIBS})
      add_executable(${exe} EXCLUDE_FROM_ALL $<TARGET_OBJECTS:${target}_mutant_tests>)
      target_link_libraries(${exe} PRIVATE ${exe}_impl pa_testing ${ARG_EXTRA_LIBS})
      if(ARG_SIMT)
        target_link_libraries(${exe} PRIVATE pa_simt)
      endif()
      add_dependencies(${target}_mutants ${exe})
    endforeach()
  endif()
endfunction()

# The library of one implementation file: the file itself for a plain lab; for a SIMT lab the
# room's given/launchers.cpp including it (per backend) plus the other given/*.cpp.
function(_pa_add_impl name impl room)
  cmake_parse_arguments(ARG "SIMT;EMULATOR_ONLY;EXCLUDE_FROM_ALL" "" "LIBS" ${ARGN})
  set(exclude "")
  if(ARG_EXCLUDE_FROM_ALL)
    set(exclude EXCLUDE_FROM_ALL)
  endif()
  if(NOT ARG_SIMT)
    add_library(${name} STATIC ${exclude} "${impl}")
    target_include_directories(${name} PUBLIC "${room}")
    target_link_libraries(${name} PUBLIC pa_common ${ARG_LIBS})
    target_compile_options(${name} PRIVATE ${PA_WARNING_FLAGS})
    return()
  endif()

  file(GLOB host_sources CONFIGURE_DEPENDS "${room}/given/*.cpp")
  list(REMOVE_ITEM host_sources "${room}/given/launchers.cpp")
  add_library(${name} STATIC ${exclude} "${room}/given/launchers.cpp" ${host_sources})
  target_include_directories(${name} PUBLIC "${room}")
  target_link_libraries(${name} PUBLIC pa_common pa_simt ${ARG_LIBS})
  target_compile_definitions(${name} PRIVATE "PA_LAB_IMPL=\"${impl}\"")
  target_compile_options(${name} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:${PA_WARNING_FLAGS}>)
  _pa_simt_source_options(${name})
  # The kernels' loads and stores go through the emulator's memory checker (races, bounds).
  pa_simt_checked(${name})
  if(impl MATCHES "/starter\\.cpp$")
    # A skeleton names its parameters and locals before the student uses them.
    target_compile_options(${name} PRIVATE
      $<$<COMPILE_LANGUAGE:CXX>:-Wno-unused-parameter -Wno-unused-variable
                                -Wno-unused-local-typedefs -Wno-unused-but-set-variable>
      $<$<COMPILE_LANGUAGE:CUDA>:--diag-suppress=177,550>)
  endif()
  if(NOT PA_CUDA_BACKEND OR ARG_EMULATOR_ONLY)
    return()
  endif()
  set(cu "${CMAKE_CURRENT_BINARY_DIR}/${name}_cuda_backend.cu")
  file(CONFIGURE OUTPUT "${cu}" CONTENT
       "// Generated by pa_add_lab(... SIMT): nvcc's build of\n#include \"${room}/given/launchers.cpp\"\n")
  target_sources(${name} PRIVATE "${cu}")
  target_compile_definitions(${name} PUBLIC PA_HAVE_CUDA_BACKEND=1)
  # Eigen (pulled in by pa/checks.hpp) annotates host code for nvcc; these keep its notes quiet.
  target_compile_options(${name} PRIVATE
    $<$<COMPILE_LANGUAGE:CUDA>:--expt-relaxed-constexpr --diag-suppress=20012,20013,20015>)
  set_target_properties(${name} PROPERTIES
    CUDA_ARCHITECTURES "80;90"
    CUDA_STANDARD 20
    CUDA_STANDARD_REQUIRED ON
    CUDA_RUNTIME_LIBRARY Shared)
  target_link_libraries(${name} PUBLIC CUDA::cudart)
endfunction()

# What every translation unit that includes CUDA C++ needs on the host compiler.
function(_pa_simt_source_options target)
  target_link_libraries(${target} PRIVATE pa_simt)
  # `#pragma unroll` speaks to nvcc; the host compilers would warn about every one of them.
  target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-Wno-unknown-pragmas>)
endfunction()
