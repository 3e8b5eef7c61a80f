# cohort_module(NAME [DIR PATH] DEPS...): a static library cohort_NAME from every .cc in src/PATH
# (PATH defaults to NAME; a layer's sub-library names its folder, e.g. DIR train/data), with src/ as
# include root, so that headers are included as "job/tfjob.h" or "train/data/idx_file.h". One
# library per layer keeps dependencies pointing one way: a layer can only include what it links.
# The libraries are position-independent, since the installed shared library libcohort.so is made
# of them (src/public_api); the programs link them statically as before.
function(cohort_module name)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "DIR" "")
  if(NOT arg_DIR)
    set(arg_DIR ${name})
  endif()
  file(GLOB sources CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/${arg_DIR}/*.cc)
  add_library(cohort_${name} STATIC ${sources})
  set_target_properties(cohort_${name} PROPERTIES POSITION_INDEPENDENT_CODE ON)
  target_include_directories(cohort_${name} PUBLIC ${PROJECT_SOURCE_DIR}/src)
  target_link_libraries(cohort_${name} PUBLIC ${arg_UNPARSED_ARGUMENTS})
endfunction()

# cohort_test(NAME DEPS... [HEAVY gtest_filter] [EXCLUDE gtest_filter] [WHOLE_BINARY]
#             [LABELS label...] [TIMEOUT s]):
# one gtest binary from every *_test.cc in tests/NAME, registered with ctest test by test, each
# with a TIMEOUT of 300 s (or TIMEOUT) and the label NAME. The tests that HEAVY's
# gtest filter selects (many processes, all cores busy for seconds) run with RUN_SERIAL: alone, so
# that under `ctest -j` they do not starve the tests that measure time. EXCLUDE's tests are not
# registered here (a test registered on its own, with other labels). WHOLE_BINARY registers the
# binary as one ctest test NAME instead, run alone, with the labels NAME and LABELS: for tests that
# share an expensive fixture started once per process (a Kubernetes control plane).
# The binary's main (tests/testing/gtest_main.cc) exits 77 when a test skipped and none failed;
# every registration here says SKIP_RETURN_CODE 77, so ctest reports a skip as a skip, never as
# Passed (an add_test of such a binary elsewhere must say it too: cohort_gtest_skips).
function(cohort_test name)
  cmake_parse_arguments(PARSE_ARGV 1 arg "WHOLE_BINARY" "HEAVY;EXCLUDE;TIMEOUT" "LABELS")
  file(GLOB sources CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/tests/${name}/*_test.cc)
  if(NOT sources)
    return()
  endif()
  if(NOT arg_TIMEOUT)
    set(arg_TIMEOUT 300)
  endif()
  if(arg_LABELS AND NOT arg_WHOLE_BINARY)
    # gtest_discover_tests cannot pass a list of labels on to the tests it finds.
    message(FATAL_ERROR "cohort_test(${name}): LABELS needs WHOLE_BINARY")
  endif()
  add_executable(${name}_test ${sources})
  target_link_libraries(${name}_test PRIVATE ${arg_UNPARSED_ARGUMENTS} cohort_testing
    cohort_testing_main GTest::gmock)
  target_compile_definitions(${name}_test PRIVATE
    COHORT_TEST_DATA_DIR="${PROJECT_SOURCE_DIR}/tests/data"
    COHORT_BINARY_DIR="${PROJECT_BINARY_DIR}")
  set(excluded "")  # gtest filter syntax: POSITIVE[-NEGATIVE], patterns separated by ':'
  set(heavy_excluded "")
  if(arg_EXCLUDE)
    set(excluded ":${arg_EXCLUDE}")
    set(heavy_excluded "-${arg_EXCLUDE}")
  endif()
  if(arg_WHOLE_BINARY)
    add_test(NAME ${name} COMMAND ${name}_test)
    set_tests_properties(${name} PROPERTIES LABELS "${name};${arg_LABELS}" TIMEOUT ${arg_TIMEOUT}
      RUN_SERIAL TRUE SKIP_RETURN_CODE 77)
  elseif(arg_HEAVY)
    gtest_discover_tests(${name}_test TEST_FILTER "-${arg_HEAVY}${excluded}"
      PROPERTIES LABELS ${name} TIMEOUT ${arg_TIMEOUT} SKIP_RETURN_CODE 77 DISCOVERY_TIMEOUT 60)
    gtest_discover_tests(${name}_test TEST_FILTER "${arg_HEAVY}${heavy_excluded}"
      PROPERTIES LABELS ${name} TIMEOUT ${arg_TIMEOUT} RUN_SERIAL TRUE SKIP_RETURN_CODE 77
      DISCOVERY_TIMEOUT 60)
  else()
    if(arg_EXCLUDE)
      set(filter TEST_FILTER "-${arg_EXCLUDE}")
    else()
      set(filter "")
    endif()
    gtest_discover_tests(${name}_test ${filter} PROPERTIES LABELS ${name} TIMEOUT ${arg_TIMEOUT}
      SKIP_RETURN_CODE 77 DISCOVERY_TIMEOUT 60)
  endif()
endfunction()

# cohort_gtest_skips(TEST...): ctest tests that run a gtest binary with cohort_testing_main
# (directly, with add_test) report a skipped gtest test as skipped (exit status 77).
function(cohort_gtest_skips)
  set_tests_properties(${ARGN} PROPERTIES SKIP_RETURN_CODE 77)
endfunction()

# cohort_missing_tool_test(NAME LABELS WHY): registers the test NAME, which CMake could not set up
# because a tool it needs is missing (Gloo, Open MPI), as a test that fails at once saying WHY
# (what is missing and how to install it). A test that needs a tool is thus always registered and
# never silently left out of the run.
function(cohort_missing_tool_test name labels why)
  add_test(NAME ${name} COMMAND sh -c "echo \"$1\" >&2; exit 1" missing-tool "${name}: ${why}")
  set_tests_properties(${name} PROPERTIES LABELS "${labels}" TIMEOUT 30)
endfunction()
