#!/usr/bin/env bash
# Measures a cold build: a new build directory, ccache disabled, all cores.
# Prints the seconds to configure, to build the main job's targets (the
# launcher and examples/lenet5: what scripts/run-example.sh builds), and then
# the rest of the tree (library, launcher, examples, tests, benches).
#   scripts/measure-build.sh [SOURCE_DIR]    (default: this checkout)
# Run it on an idle machine; docs/building.md has the numbers.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
src=$(cd "${1:-$root}" && pwd)
build=$(mktemp -d /tmp/tnt-cold-build.XXXXXX)
trap 'rm -rf "$build"' EXIT
export CCACHE_DISABLE=1
now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.0f", b - a }'; }
t0=$(now)
cmake -S "$src" -B "$build" -G Ninja >/dev/null
t1=$(now)
cmake --build "$build" -j "$(nproc)" --target tnt_launcher lenet5 >"$build.main.log" 2>&1 \
  || { tail -30 "$build.main.log"; exit 1; }
t2=$(now)
cmake --build "$build" -j "$(nproc)" >"$build.all.log" 2>&1 \
  || { tail -30 "$build.all.log"; exit 1; }
t3=$(now)
objects=$(find "$build" -name '*.o' | wc -l)
echo "source:              $src ($(git -C "$src" rev-parse --short HEAD 2>/dev/null || echo '?'))"
echo "cores:               $(nproc)"
echo "configure:           $(secs "$t0" "$t1") s"
echo "main job's targets:  $(secs "$t1" "$t2") s"
echo "whole tree:          $(secs "$t1" "$t3") s ($objects objects)"
if grep -q "invalid-pch" "$build.main.log" "$build.all.log"; then
  echo "WARNING: a precompiled header was rejected (the build is slower than it should be):"
  grep -h -B2 "invalid-pch" "$build.main.log" "$build.all.log" | head -12
fi
rm -f "$build.main.log" "$build.all.log"
