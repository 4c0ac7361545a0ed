#!/usr/bin/env bash
# The test command: installs dependencies, builds everything and runs the
# whole suite (unit tests, multi-rank tests through the launcher at 1-4
# ranks, launcher tests, install test). Extra arguments go to ctest,
# e.g. scripts/test.sh -L unit
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${TNT_BUILD_DIR:-$root/build}
"$root/scripts/build.sh"
cd "$build"
# Inside a Slurm job the launcher would place the tests' ranks in the
# allocation (and refuse -n beyond it): the suite runs as on a plain node.
for v in $(compgen -e | grep '^SLURM_' || true); do unset "$v"; done
# Tests labelled "long" (ctest -L long) are left out unless arguments are
# given: they repeat what a shorter test shows (docs/building.md).
[ $# -gt 0 ] || set -- -LE long
ctest --output-on-failure -j 2 "$@"
