#!/usr/bin/env bash
# Builds the unit and multi-rank test suites under the sanitizers and runs
# them. Too slow for every CI run (docs/building.md has the times), so it is
# a script people run, not part of `ctest`.
#
#   scripts/sanitize.sh [asan|tsan|all] [CTEST ARGS...]     default: asan
#
#   asan  AddressSanitizer (with LeakSanitizer) + UndefinedBehaviorSanitizer,
#         in build-asan/
#   tsan  ThreadSanitizer, in build-tsan/
#
# Both run the same tests: the single-process unit tests (labels unit and
# cli: the comm engine, the data pipeline's prefetch thread and worker pool,
# the TensorBoard writer thread, ranks as threads of one process, the
# launcher's logic) and the multi-rank tests through the launcher at 1-4
# ranks (label mpi).
# Everything of ours is compiled with the sanitizer (library, launcher,
# tests) at -O1 with line tables; LibTorch and OpenMPI are not.
#
# Reports do not go to the tests' output (some tests check that output,
# some expect a rank to fail) but to files in build-<mode>/sanitizer-logs/;
# UBSan's, which GCC's runtime always writes to stderr, are picked out of
# the tests' output. The run fails if ctest fails or any report is there.
# Suppressions, each with its reason: tests/sanitizers/. The time taken
# and the results: docs/building.md, "Sanitizers".
# Extra arguments go to ctest, e.g. scripts/sanitize.sh tsan -R CommEngine.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
supp=$root/tests/sanitizers
mode=${1:-asan}
[ $# -gt 0 ] && shift
jobs=${TNT_SANITIZE_JOBS:-2}

case "$mode" in
  asan|tsan|all) ;;
  *) echo "usage: scripts/sanitize.sh [asan|tsan|all] [CTEST ARGS...]" >&2; exit 2 ;;
esac

# What the unit and multi-rank tests need, and nothing else (no
# benchmarks, no other examples: lenet5 is used by
# mpi.failure.library_error_report).
targets=(tnt_launcher unit_tests data_unit_tests callbacks_io_unit_tests tnt_cli_tests
         mpi_collectives_test mpi_scenarios mpi_dp_test mpi_process_sets_test
         mpi_data_test mpi_callbacks_io_test lenet5)
# unit_crafted_files_memory_bounded runs the crafted-file tests again under
# `ulimit -v 3000000`; a sanitizer reserves terabytes of address space for
# its shadow memory and cannot start under that cap. The same tests run
# uncapped as unit_tests' own entries (Crafted*, PickleReader*).
ctest_selection=(-L 'unit|cli|mpi' -E '^unit_crafted_files_memory_bounded$')

sanitizer_flags() {
  case "$1" in
    asan) echo "-fsanitize=address,undefined -fno-sanitize-recover=undefined" ;;
    tsan) echo "-fsanitize=thread" ;;
  esac
}

# The options of each runtime. log_path sends every report to a file of
# its own (<tool>.<pid>) in the build's sanitizer-logs/.
export_options() {
  local mode=$1 logs=$2
  if [ "$mode" = asan ]; then
    export ASAN_OPTIONS="log_path=$logs/asan:verify_asan_link_order=0:detect_leaks=1:check_initialization_order=1:strict_init_order=1:detect_stack_use_after_return=1:strict_string_checks=1"
    export LSAN_OPTIONS="suppressions=$supp/lsan.supp:print_suppressions=0"
    # GCC's UBSan runtime (libubsan, apart from libasan) ignores log_path
    # and always writes to stderr; the run finds its reports in the tests'
    # output instead (see below).
    export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
  else
    # halt_on_error=0: every race of a run is reported, the process then
    # exits with status 66.
    export TSAN_OPTIONS="log_path=$logs/tsan:halt_on_error=0:second_deadlock_stack=1:suppressions=$supp/tsan.supp"
  fi
}

configure() {
  local mode=$1 dir=$2 flags
  flags=$(sanitizer_flags "$mode")
  # Debug keeps assert() and TNT's own checks; -O1 because -O0 makes the
  # multi-rank tests too slow under ASan; -g1 (line tables) is what a
  # report's stack needs and compiles faster than -g. The tests' default
  # time limit goes from 120 s to 600 s: a hang still fails, a sanitized
  # 4-rank test on a busy machine does not.
  cmake -S "$root" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Debug \
        -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g1 -fno-omit-frame-pointer" \
        -DCMAKE_C_FLAGS_DEBUG="-O1 -g1 -fno-omit-frame-pointer" \
        -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_C_FLAGS="$flags" \
        -DCMAKE_EXE_LINKER_FLAGS="$flags" -DCMAKE_SHARED_LINKER_FLAGS="$flags" \
        -DTNT_BUILD_BENCHMARKS=OFF -DTNT_TEST_TIMEOUT=600 > "$dir/configure.log" 2>&1 \
    || { cat "$dir/configure.log"; return 1; }
}

run_mode() {
  local mode=$1; shift
  local dir=$root/build-$mode logs start status=0
  logs=$dir/sanitizer-logs

  start=$(date +%s)
  mkdir -p "$dir"
  configure "$mode" "$dir"
  # The options are set before building: gtest_discover_tests runs each
  # test executable once to list its tests.
  rm -rf "$logs"; mkdir -p "$logs"
  export_options "$mode" "$logs"
  echo "sanitize $mode: building ${#targets[@]} targets in $dir (log: $dir/build.log)"
  cmake --build "$dir" -j "$jobs" $(printf -- '--target %s ' "${targets[@]}") \
        > "$dir/build.log" 2>&1 || { tail -40 "$dir/build.log"; return 1; }
  local built=$(( $(date +%s) - start ))

  # OpenMPI's components stay loaded (tests/sanitizers/keep_loaded.c); the
  # preload is a plain C library, hence verify_asan_link_order=0.
  cc -shared -fPIC -O2 -o "$dir/keep_loaded.so" "$supp/keep_loaded.c"
  echo "sanitize $mode: running ctest ${ctest_selection[*]} $* (log: $dir/ctest.log)"
  rm -f "$dir/ctest.xml"
  (cd "$dir" && LD_PRELOAD="$dir/keep_loaded.so${LD_PRELOAD:+:$LD_PRELOAD}" \
     ctest --output-on-failure -j "$jobs" "${ctest_selection[@]}" "$@" \
           --output-junit ctest.xml --test-output-size-passed 10000000 \
           --test-output-size-failed 10000000) > "$dir/ctest.log" 2>&1 \
    || status=1
  local ran=$(( $(date +%s) - start - built ))
  sed -n '/tests passed/,$p' "$dir/ctest.log" | grep -v "^Errors while running CTest" || true

  # The whole output of every test, passed ones included, for UBSan's
  # reports on stderr (file:line:column: runtime error: ...).
  grep -s -E -B1 -A12 ':[0-9]+:[0-9]+: runtime error: ' "$dir/ctest.xml" \
       > "$logs/ubsan-from-test-output" || rm -f "$logs/ubsan-from-test-output"
  local reports
  reports=$(find "$logs" -type f | sort)
  if [ -n "$reports" ]; then
    status=1
    echo "sanitize $mode: $(wc -l <<<"$reports") sanitizer report file(s) in $logs:"
    # shellcheck disable=SC2086
    grep -h -E "ERROR: |WARNING: ThreadSanitizer|SUMMARY: |runtime error: " $reports \
      | sed -E 's/^==[0-9]+==//; s/ \(pid=[0-9]+\)//' | sort | uniq -c | sort -rn | head -20
    echo "--- the first, $(head -1 <<<"$reports"):"
    head -80 "$(head -1 <<<"$reports")"
  else
    echo "sanitize $mode: no sanitizer reports"
  fi
  echo "sanitize $mode: build ${built} s, tests ${ran} s, $([ $status = 0 ] && echo clean || echo FAILED)"
  return $status
}

overall=0
if [ "$mode" = asan ] || [ "$mode" = all ]; then run_mode asan "$@" || overall=1; fi
if [ "$mode" = tsan ] || [ "$mode" = all ]; then run_mode tsan "$@" || overall=1; fi
exit $overall
