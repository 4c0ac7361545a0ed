#!/usr/bin/env bash
# Installs the Debian dependencies (idempotent), configures and builds
# Tarantella in ./build (or $TNT_BUILD_DIR). Extra arguments are build targets.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${TNT_BUILD_DIR:-$root/build}
"$root/scripts/install-deps.sh"
# Paths relative to the checkout in ccache's keys: another clone of the
# repository (CI's, say) reuses the objects this one compiled.
export CCACHE_BASEDIR="$root"
# RelWithDebInfo compiles with -g, and ccache then hashes the build
# directory too (hash_dir) unless told not to: without this, no other
# checkout's build could reuse an object.
export CCACHE_NOHASHDIR=1
if [ ! -f "$build/CMakeCache.txt" ]; then
  # -Wall -Wextra are always on; add -DTNT_WARNINGS_AS_ERRORS=ON to make
  # them fatal.
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo
fi
targets=()
for t in "$@"; do targets+=(--target "$t"); done
cmake --build "$build" -j "$(nproc)" "${targets[@]}"
