#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz/, clang with AddressSanitizer and
# UndefinedBehaviorSanitizer) and runs each for SECONDS (default 600) from its
# seed corpus. New inputs go to a scratch copy, not into the repository; a
# crash leaves its input in build-fuzz/crashes/ and fails the script.
#   scripts/fuzz.sh [SECONDS] [TARGET...]    targets: hostfile shell_words idx csv torch_save tar image
# Needs the main build's library (scripts/build.sh tarantella) and Debian's
# clang and libfuzzer-14-dev. TNT_FUZZ_OPT: the targets' optimization level
# (default -O1; the suite's smoke run, tests/fuzz/smoke.sh, uses -O0).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
main_build=${TNT_BUILD_DIR:-$root/build}
out=${TNT_FUZZ_DIR:-$root/build-fuzz}
seconds=${1:-600}; shift || true
targets=("$@"); [ ${#targets[@]} -gt 0 ] || targets=(hostfile shell_words idx csv torch_save tar image)
command -v clang++ >/dev/null || { echo "fuzz.sh: clang++ is missing (apt-get install clang libfuzzer-14-dev)"; exit 2; }
[ -f "$main_build/src/libtarantella.so" ] || "$root/scripts/build.sh" tarantella
mkdir -p "$out"
# The torch the main build was configured with (Debian's, or a pip torch);
# its package folder also in CMAKE_PREFIX_PATH, where TorchConfig.cmake
# looks for Caffe2Config.cmake (else it finds Debian's).
torch_dir=$(sed -n 's/^Torch_DIR:[A-Z]*=//p' "$main_build/CMakeCache.txt")
# A fuzz tree configured for another torch keeps that torch's cached paths.
if [ -f "$out/CMakeCache.txt" ] && ! grep -qxF "Torch_DIR:UNINITIALIZED=$torch_dir" "$out/CMakeCache.txt" &&
   ! grep -qxF "Torch_DIR:PATH=$torch_dir" "$out/CMakeCache.txt"; then
  rm -rf "$out"
fi
mkdir -p "$out"
cmake -S "$root/tests/fuzz" -B "$out" -G Ninja -DCMAKE_CXX_COMPILER=clang++ \
      -DTNT_FUZZ_OPT="${TNT_FUZZ_OPT:--O1}" -DTNT_MAIN_BUILD="$main_build" ${torch_dir:+-DTorch_DIR="$torch_dir"} \
      ${torch_dir:+-DCMAKE_PREFIX_PATH="$(dirname "$torch_dir")"} > "$out/configure.log" 2>&1 \
  || { cat "$out/configure.log"; exit 1; }
cmake --build "$out" -j "$(nproc)" --target $(printf '%s_fuzz ' "${targets[@]}") > "$out/build.log" 2>&1 \
  || { tail -30 "$out/build.log"; exit 1; }
mkdir -p "$out/crashes"
export LSAN_OPTIONS="suppressions=$root/tests/fuzz/lsan.supp${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
status=0
for t in "${targets[@]}"; do
  work="$out/corpus/$t"; mkdir -p "$work"
  log="$out/$t.log"
  # -rss_limit_mb: a parser must not allocate what a crafted header claims.
  if "$out/${t}_fuzz" -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 \
       -artifact_prefix="$out/crashes/$t-" -print_final_stats=1 \
       "$work" "$root/tests/fuzz/corpus/$t" > "$log" 2>&1; then
    runs=$(grep -oE "stat::number_of_executed_units: *[0-9]+" "$log" | grep -oE "[0-9]+$" || echo "?")
    echo "fuzz $t: ${seconds} s, $runs executions, no crash"
  else
    echo "fuzz $t: FAILED (see $log; the input is in $out/crashes/)"; tail -20 "$log"; status=1
  fi
done
exit $status
