# How the suite shares the machine: each test claims the cores it keeps busy,
# and ctest starts a test only when its claim fits (CTest resource
# allocation, a "cores" resource of 2 slots; docs/building.md, "What keeps
# the suite short").
#
#   claim 2   PROCESSORS 2: a job whose ranks compute on both cores (a
#             multi-rank training or collective run; at 2+ ranks each rank
#             has one thread here). Runs beside "waits" tests only.
#   claim 1   the default: one busy process (unit tests, one-rank jobs, and
#             jobs whose ranks mostly take turns).
#   claim 0   LABELS waits: a test that mostly sleeps, waiting for a
#             timeout, a stopped rank or a link that is down (measured at
#             under 0.6 CPU seconds per second). Runs beside anything.
#
# The claims are in halves of the machine, whatever its size: the launcher
# gives a job's ranks the node's cores between them, so a multi-rank job
# fills any node and the slots stay 2. scripts/test.sh runs `ctest -j 4`:
# the claims keep the busy tests to two cores' worth, and the -j bound
# leaves room for two waiting ones beside them. Without the claims (the
# RUN_SERIAL they replace) a test that slept 30 s held the whole machine.

set(TNT_TEST_CORE_SLOTS 2)

# In tests/CMakeLists.txt, before the test folders: writes the resource
# file and points ctest at it (plain `ctest` in the build folder reads it).
macro(tnt_test_cores_setup)
  set(_tnt_spec "${CMAKE_BINARY_DIR}/ctest-cores.json")
  file(WRITE "${_tnt_spec}"
       "{\"version\": {\"major\": 1, \"minor\": 0},\n"
       " \"local\": [{\"cores\": [{\"id\": \"machine\", \"slots\": ${TNT_TEST_CORE_SLOTS}}]}]}\n")
  set(CTEST_RESOURCE_SPEC_FILE "${_tnt_spec}")
  # ctest starts the tests that took longest first, by the times of earlier
  # runs in this build folder. A new folder (every CI run) has none, and a
  # long test started last held the suite up alone: it starts from the
  # times measured here, tests/ctest-costs.txt (refresh it from
  # build/Testing/Temporary/CTestCostData.txt, docs/building.md).
  set(_tnt_costs "${CMAKE_BINARY_DIR}/Testing/Temporary/CTestCostData.txt")
  if(NOT EXISTS "${_tnt_costs}")
    configure_file("${PROJECT_SOURCE_DIR}/tests/ctest-costs.txt" "${_tnt_costs}" COPYONLY)
  endif()
endmacro()

# The RESOURCE_GROUPS value for a test with these PROCESSORS and LABELS
# (empty for a test that waits).
function(tnt_test_core_claim out processors labels)
  if("waits" IN_LIST labels)
    set(${out} "" PARENT_SCOPE)
    return()
  endif()
  if(NOT processors)
    set(processors 1)
  endif()
  if(processors GREATER TNT_TEST_CORE_SLOTS)
    set(processors ${TNT_TEST_CORE_SLOTS})
  endif()
  set(${out} "cores:${processors}" PARENT_SCOPE)
endfunction()

function(_tnt_claim_cores)
  get_property(tests DIRECTORY PROPERTY TESTS)
  foreach(t IN LISTS tests)
    get_test_property(${t} RESOURCE_GROUPS groups)
    if(groups)
      continue()  # claimed by hand
    endif()
    get_test_property(${t} RUN_SERIAL serial)
    if(serial)
      message(FATAL_ERROR "test ${t}: RUN_SERIAL holds the whole machine while it runs; say what it "
                          "uses instead (PROCESSORS 2, or LABELS waits), cmake/TntTestCores.cmake")
    endif()
    get_test_property(${t} PROCESSORS processors)
    get_test_property(${t} LABELS labels)
    tnt_test_core_claim(claim "${processors}" "${labels}")
    if(claim)
      set_tests_properties(${t} PROPERTIES RESOURCE_GROUPS "${claim}")
    endif()
  endforeach()
endfunction()

# First line of each folder that adds tests: the claims are set when the
# folder's CMakeLists.txt has been read to its end (set_tests_properties
# reaches only the tests of its own folder).
macro(tnt_claim_cores_at_end)
  cmake_language(DEFER CALL _tnt_claim_cores)
endmacro()

# The PROCESSORS of a job of `ranks` ranks: one core per rank, up to the
# whole machine's 2.
function(tnt_rank_cores out ranks)
  if(ranks GREATER TNT_TEST_CORE_SLOTS)
    set(ranks ${TNT_TEST_CORE_SLOTS})
  endif()
  set(${out} ${ranks} PARENT_SCOPE)
endfunction()
