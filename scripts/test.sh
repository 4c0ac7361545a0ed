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
ctest --output-on-failure -j 2 "$@"
