#!/usr/bin/env bash
# Puts a pure-Python pytest for the GPU machines' interpreter (Python 3.12,
# shared/GPU.md: no pytest there, no network) into a folder that the device
# run tool carries (an ignored path: `carry: [".device"]`), where
# scripts/device-check.sh's python_tests step finds it. Run here, where PyPI
# is reachable:
#   scripts/device-pytest.sh [DIR]      (default: .device/pytest)
# TNT_DEVICE_PYTHON_VERSION: the target's Python (default 3.12).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
dir=${1:-$root/.device/pytest}
version=${TNT_DEVICE_PYTHON_VERSION:-3.12}
pip=()
for p in python3 /usr/bin/python3; do
  if "$p" -m pip --version >/dev/null 2>&1; then pip=("$p" -m pip); break; fi
done
if [ ${#pip[@]} = 0 ]; then
  for v in /opt/tnt-venvs/*/bin/python; do
    [ -x "$v" ] && pip=("$v" -m pip) && break
  done
fi
[ ${#pip[@]} -gt 0 ] || { echo "device-pytest: no python with pip found" >&2; exit 1; }
rm -rf "$dir.tmp"
"${pip[@]}" install --quiet --target "$dir.tmp" --python-version "$version" --implementation cp \
  --only-binary=:all: --no-compile pytest
rm -rf "$dir"
mv "$dir.tmp" "$dir"
echo "device-pytest: pytest $(sed -n 's/^Version: //p' "$dir"/pytest-*.dist-info/METADATA) for" \
     "Python $version in $dir ($(du -sh "$dir" | cut -f1))"
