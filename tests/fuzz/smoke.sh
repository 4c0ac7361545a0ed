#!/usr/bin/env bash
# Usage: smoke.sh SOURCE_DIR BUILD_DIR — CI's short run of every libFuzzer
# target (scripts/fuzz.sh 3). Skipped (exit 77) without clang/libFuzzer.
set -u
src=$1; build=$2
if ! command -v clang++ >/dev/null || ! ls /usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a >/dev/null 2>&1; then
  echo "SKIP: clang++ or libFuzzer (libfuzzer-14-dev) is not installed"; exit 77
fi
# -O0: the tree is built from nothing for 3 s per target, and compiles
# in less time than -O1 would win back in executions (tests/fuzz/CMakeLists.txt).
TNT_BUILD_DIR=$build TNT_FUZZ_DIR=$build/fuzz TNT_FUZZ_OPT=-O0 "$src/scripts/fuzz.sh" 3
