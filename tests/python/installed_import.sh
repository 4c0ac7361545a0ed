#!/usr/bin/env bash
# `cmake --install` puts the package where Debian's python3 looks
# (<prefix>/lib/python3/dist-packages/tarantella), and the installed
# extension finds the installed libtarantella (RUNPATH relative to itself).
#   installed_import.sh BUILD_DIR PYTHON
set -eu
BUILD=$1 PY=$2
PREFIX=$(mktemp -d "${TMPDIR:-/tmp}/tnt-py-install.XXXXXX")
trap 'rm -rf "$PREFIX"' EXIT
cmake --install "$BUILD" --prefix "$PREFIX" >/dev/null
cd "$PREFIX"
env -u PYTHONPATH PYTHONPATH="$PREFIX/lib/python3/dist-packages" "$PY" - "$PREFIX" <<'PYEOF'
import sys
prefix = sys.argv[1]
import tarantella as tnt
assert tnt.__file__.startswith(prefix + "/lib/python3/dist-packages/tarantella/"), tnt.__file__
maps = open("/proc/self/maps").read()
libs = {line.split()[-1] for line in maps.splitlines() if "libtarantella.so" in line}
assert libs and all(l.startswith(prefix) for l in libs), f"libtarantella from {libs}"
assert tnt.get_size() == 1
print("PASS: installed package imports, with the installed libtarantella:", *libs)
PYEOF
