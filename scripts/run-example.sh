#!/usr/bin/env bash
# The main job: builds Tarantella (installing its Debian dependencies first
# if needed) and trains LeNet-5 on the bundled Fashion-MNIST data set on 2
# ranks through the `tarantella` launcher; prints the test accuracy.
# Extra arguments go to the example, e.g. scripts/run-example.sh --epochs 2
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${TNT_BUILD_DIR:-$root/build}
"$root/scripts/build.sh" tnt_launcher lenet5
"$build/bin/tarantella" -n "${TNT_RANKS:-2}" -- "$build/examples/lenet5/lenet5" "$@"
