# pa_add_lab(<NN-name> [EXTRA_LIBS <targets>...])
#
# Builds one lab's test executable `labNN` from labs/<NN-name>/test_lab.cpp and the file that
# LAB_IMPL picks: labs/<NN-name>/starter.cpp or solutions/<NN-name>/solution.cpp. Every GoogleTest
# test becomes its own ctest test (one process each, so one crash cannot hide the others), named
# labNN.Suite.Test. Tests in suites whose name ends in "Checks" test the given argument checks,
# which pass under the starter too: they get the label `checks`; all others get `labNN`.
include(GoogleTest)

set(PA_TEST_TIMEOUT 60 CACHE STRING "Per-test timeout in seconds")
set(PA_LABS "" CACHE STRING "Lab numbers to build, e.g. '01;03' (empty: every lab)")

function(pa_add_lab lab_dir)
  cmake_parse_arguments(ARG "" "" "EXTRA_LIBS" ${ARGN})
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
  target_compile_options(${target} PRIVATE ${PA_WARNING_FLAGS})

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
endfunction()
