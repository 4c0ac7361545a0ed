#!/usr/bin/env bash
# Usage: check_install.sh BUILD_DIR CONSUMER_SOURCE WORK_DIR [PYTHON_ENABLED]
set -euo pipefail
build=$1; consumer=$2; work=$3; python_enabled=${4:-0}
rm -rf "$work"; mkdir -p "$work"
cmake --install "$build" --prefix "$work/prefix" > "$work/install.log"
test -f "$work/prefix/include/tarantella/version.h" || { echo "version.h not installed"; exit 1; }
test -x "$work/prefix/bin/tarantella" || { echo "launcher not installed"; exit 1; }
launcher=( "$work/prefix/bin/tarantella" )
# Through ccache where the machine has it, as the tree itself is built: the
# consumer's compile (all of LibTorch's headers, about 16 CPU-s) runs again
# only when an installed header or a flag changed; it links and runs always.
# Paths are hashed relative to the checkout (as the tree's own compiles),
# so another clone's run hits too.
compiler_launcher=()
if command -v ccache > /dev/null; then
  export CCACHE_BASEDIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd) CCACHE_NOHASHDIR=1
  compiler_launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
cmake -S "$consumer" -B "$work/build" -DCMAKE_PREFIX_PATH="$work/prefix" \
      -DCMAKE_BUILD_TYPE=Release "${compiler_launcher[@]}" > "$work/configure.log"
cmake --build "$work/build" -j2 > "$work/build.log" || { cat "$work/build.log"; exit 1; }
# Run it as a plain process and as two ranks through the installed launcher.
"$work/build/consumer"
"${launcher[@]}" -n 2 -- "$work/build/consumer"
echo "consumer built against the installed package and ran"

# The installed launcher finds its own Python package: under a prefix that no
# Python searches (DIR/lib/python3/dist-packages), with no PYTHONPATH set.
package=$(ls -d "$work"/prefix/lib/python3/dist-packages/tarantella 2>/dev/null || true)
if [ -n "$package" ]; then
  rm -f "$work"/hello.rank*
  cat > "$work/hello.py" <<'PY'
import tarantella as tnt
# Each rank leaves its own line (the launcher shows rank 0's output only).
with open(f"hello.rank{tnt.get_rank()}", "w") as f:
    f.write(f"hello from rank {tnt.get_rank()} of {tnt.get_size()}: {tnt.__file__}\n")
PY
  (cd "$work" && env -u PYTHONPATH "${launcher[@]}" -n 2 -- hello.py) > "$work/hello.log" 2>&1 ||
    { cat "$work/hello.log"; echo "hello.py failed under the installed launcher"; exit 1; }
  for r in 0 1; do
    grep -q "hello from rank $r of 2: $package/__init__.py" "$work/hello.rank$r" ||
      { cat "$work/hello.log" "$work/hello.rank$r"; echo "rank $r did not import tarantella from $package"; exit 1; }
  done
  echo "the installed launcher ran hello.py at 2 ranks with tarantella from $package"
elif [ "$python_enabled" = 1 ]; then
  echo "the Python front end is built but cmake --install put no package in $work/prefix/lib/python3/dist-packages"
  exit 1
else
  echo "no Python front end in this build: hello.py not run"
fi
