#!/usr/bin/env bash
# Usage: check_install.sh BUILD_DIR CONSUMER_SOURCE WORK_DIR
set -euo pipefail
build=$1; consumer=$2; work=$3
rm -rf "$work"; mkdir -p "$work"
cmake --install "$build" --prefix "$work/prefix" > "$work/install.log"
test -f "$work/prefix/include/tarantella/version.h" || { echo "version.h not installed"; exit 1; }
test -x "$work/prefix/bin/tarantella" || { echo "launcher not installed"; exit 1; }
launcher=( "$work/prefix/bin/tarantella" )
cmake -S "$consumer" -B "$work/build" -DCMAKE_PREFIX_PATH="$work/prefix" \
      -DCMAKE_BUILD_TYPE=Release > "$work/configure.log"
cmake --build "$work/build" -j2 > "$work/build.log" || { cat "$work/build.log"; exit 1; }
# Run it as a plain process and as two ranks through the installed launcher.
"$work/build/consumer"
"${launcher[@]}" -n 2 -- "$work/build/consumer"
echo "consumer built against the installed package and ran"
