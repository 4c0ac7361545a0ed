#!/usr/bin/env bash
# The main job: builds Tarantella and runs the example on 2 ranks through
# the `tarantella` launcher. (The Fashion-MNIST training example replaces the
# collectives demo when tnt::Model lands; see README.)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${TNT_BUILD_DIR:-$root/build}
"$root/scripts/build.sh" tnt_launcher hello
"$build/bin/tarantella" -n "${TNT_RANKS:-2}" -- "$build/examples/hello/hello" "$@"
