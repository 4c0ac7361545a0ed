#!/usr/bin/env bash
# Installs the Debian dependencies (idempotent), configures and builds
# Tarantella in ./build (or $TNT_BUILD_DIR). Extra arguments are build targets.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${TNT_BUILD_DIR:-$root/build}
"$root/scripts/install-deps.sh"
# ccache's settings (relative paths, precompiled headers) come with the
# compiler launcher that CMakeLists.txt sets up.
if [ ! -f "$build/CMakeCache.txt" ]; then
  # Release (-O2, no -g); -Wall -Wextra are always on; add
  # -DTNT_WARNINGS_AS_ERRORS=ON to make them fatal.
  # TNT_BUILD_BENCHMARKS=OFF: without bench/ (CI's Debian leg; the pip leg
  # builds them).
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
        -DTNT_BUILD_BENCHMARKS="${TNT_BUILD_BENCHMARKS:-ON}"
fi
targets=()
for t in "$@"; do targets+=(--target "$t"); done
cmake --build "$build" -j "$(nproc)" "${targets[@]}"
