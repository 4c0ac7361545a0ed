#!/usr/bin/env bash
# The test command: installs dependencies, builds everything the suite
# needs (not the benchmarks) and runs the whole suite (unit tests,
# multi-rank tests through the launcher at 1-4 ranks, launcher tests,
# install test). Extra arguments go to ctest, e.g. scripts/test.sh -L unit
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${TNT_BUILD_DIR:-$root/build}
# The benchmarks have no tests: a build folder that this script configures
# leaves them out, as CI's does (TNT_BUILD_BENCHMARKS=ON builds them; so
# does a build folder configured with them, e.g. by scripts/build.sh).
export TNT_BUILD_BENCHMARKS=${TNT_BUILD_BENCHMARKS:-OFF}
"$root/scripts/build.sh"
cd "$build"
# Inside a Slurm job the launcher would place the tests' ranks in the
# allocation (and refuse -n beyond it): the suite runs as on a plain node.
for v in $(compgen -e | grep '^SLURM_' || true); do unset "$v"; done
# Tests labelled "long" (ctest -L long) are left out unless arguments are
# given: they repeat what a shorter test shows (docs/building.md).
[ $# -gt 0 ] || set -- -LE long
# -j 4: each test claims the cores it keeps busy (cmake/TntTestCores.cmake),
# at most 2 in all; the other two places are for tests that mostly wait.
ctest --output-on-failure -j 4 "$@"
