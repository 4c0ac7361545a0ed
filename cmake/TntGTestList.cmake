# Script mode, run after each link by tnt_gtest_suites (TntGTestSuites.cmake):
# lists exe's GoogleTest suites and writes one add_test per suite (per case
# for the suites in each_case) to out, each with the properties that the
# including file's _tnt_gtest_props sets. Inputs: exe, out, prefix,
# each_case.
cmake_minimum_required(VERSION 3.18)
execute_process(COMMAND "${exe}" --gtest_list_tests
                OUTPUT_VARIABLE listing ERROR_VARIABLE errors RESULT_VARIABLE rc
                TIMEOUT 60)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${exe} --gtest_list_tests failed (${rc}):\n${listing}${errors}")
endif()
string(REPLACE "\n" ";" lines "${listing}")
set(body "")
set(count 0)
macro(add_one name filter)
  string(APPEND body
    "add_test([==[${prefix}${name}]==] [==[${exe}]==] [==[--gtest_filter=${filter}]==])\n"
    "_tnt_gtest_props([==[${prefix}${name}]==])\n")
  math(EXPR count "${count} + 1")
endmacro()
set(suite "")
foreach(line IN LISTS lines)
  # A suite line starts in the first column and ends with '.', before an
  # optional "  # TypeParam = ..." comment; its cases follow, indented.
  if(line MATCHES "^([^ #][^ ]*)\\.( .*)?$")
    set(suite "${CMAKE_MATCH_1}")
    if(NOT suite IN_LIST each_case)
      add_one("${suite}" "${suite}.*")
    endif()
  elseif(line MATCHES "^  ([^ #][^ ]*)" AND suite IN_LIST each_case)
    add_one("${suite}.${CMAKE_MATCH_1}" "${suite}.${CMAKE_MATCH_1}")
  endif()
endforeach()
if(count EQUAL 0)
  message(FATAL_ERROR "${exe} lists no test suites:\n${listing}")
endif()
file(WRITE "${out}.tmp" "${body}")
file(RENAME "${out}.tmp" "${out}")
