# tnt_gtest_suites(TARGET PREFIX p [EACH_CASE suite...] PROPERTIES ...): one ctest test per
# GoogleTest test suite of TARGET (named p<Suite>, run with
# --gtest_filter=<Suite>.*), instead of gtest_discover_tests' one test per
# test case. A test process pays LibTorch's start-up (about 1 s here) before
# its first test: one process per case cost the suite 290 s of its 20-minute
# budget for under 10 s of testing. Failures still name the case (gtest's
# output, shown by --output-on-failure), and `ctest -R p<Suite>` runs a suite.
#
# Like gtest_discover_tests (POST_BUILD mode) the list comes from
# `TARGET --gtest_list_tests` after each link, so a new suite needs no CMake
# change. Suites named in EACH_CASE keep one process per test case (for tests
# that change process-wide state, such as malloc's settings). Before the first build the target shows as one test that fails
# with "not built".
set(_tnt_gtest_list_script ${CMAKE_CURRENT_LIST_DIR}/TntGTestList.cmake)

function(tnt_gtest_suites target)
  cmake_parse_arguments(arg "" "PREFIX" "EACH_CASE;PROPERTIES" ${ARGN})
  # The cores each suite claims (TntTestCores.cmake): its PROCESSORS, or
  # none where it is labelled waits.
  if(NOT "RESOURCE_GROUPS" IN_LIST arg_PROPERTIES)
    set(processors 1)
    list(FIND arg_PROPERTIES PROCESSORS at)
    if(at GREATER -1)
      math(EXPR at "${at} + 1")
      list(GET arg_PROPERTIES ${at} processors)
    endif()
    tnt_test_core_claim(claim "${processors}" "${arg_PROPERTIES}")
    if(claim)
      list(APPEND arg_PROPERTIES RESOURCE_GROUPS "${claim}")
    endif()
  endif()
  set(suites_file "${CMAKE_CURRENT_BINARY_DIR}/${target}_suites.cmake")
  set(include_file "${CMAKE_CURRENT_BINARY_DIR}/${target}_include.cmake")
  # The properties, each quoted as a bracket argument so that values with
  # commas, spaces or semicolons pass through unchanged.
  set(props "")
  foreach(p IN LISTS arg_PROPERTIES)
    string(APPEND props " [==[${p}]==]")
  endforeach()
  add_custom_command(TARGET ${target} POST_BUILD
    COMMAND ${CMAKE_COMMAND} -D "exe=$<TARGET_FILE:${target}>" -D "out=${suites_file}"
            -D "prefix=${arg_PREFIX}" "-D" "each_case=${arg_EACH_CASE}"
            -P ${_tnt_gtest_list_script}
    BYPRODUCTS ${suites_file}
    VERBATIM)
  # The properties live in the include file, written at each configuration,
  # so that a change to them holds without a new link of the target.
  file(WRITE "${include_file}"
    "macro(_tnt_gtest_props name)\n"
    "  set_tests_properties(\"\${name}\" PROPERTIES${props})\n"
    "endmacro()\n"
    "if(EXISTS \"${suites_file}\")\n"
    "  include(\"${suites_file}\")\n"
    "else()\n"
    "  add_test(${arg_PREFIX}${target}_NOT_BUILT ${target}_NOT_BUILT)\n"
    "endif()\n")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES "${include_file}")
endfunction()
