#!/usr/bin/env bash
# The package's type hints checked (python.mypy, python.stubtest):
#
#   typecheck.sh mypy     PYTHON BUILD_DIR SOURCE_DIR   # mypy --strict on build/python/tarantella
#   typecheck.sh stubtest PYTHON BUILD_DIR SOURCE_DIR   # _tarantella's stub against the built module
#
# Both use the interpreter the package was built for (`PYTHON -m mypy`), so
# they check against that interpreter's torch: Debian's python3-torch 1.13
# with Debian's mypy, or a venv's pip torch with the mypy of
# requirements/torch-*.txt. Without mypy the test fails with the install
# command instead of passing unchecked.
set -euo pipefail
what=$1 py=$2 build=$3 src=$4
if ! "$py" -c 'import mypy' 2>/dev/null; then
  if [ "$py" = /usr/bin/python3 ]; then
    fix="apt-get install mypy (Debian's package; scripts/install-deps.sh installs it)"
  else
    fix="$py -m pip install -r $src/requirements/torch-newest.txt (it pins mypy)"
  fi
  echo "python.$what: $py cannot import mypy, so the type hints are not checked: $fix" >&2
  exit 1
fi
cd "$build/python"
case $what in
  mypy)
    exec "$py" -m mypy --strict --config-file "$src/pyproject.toml" \
         --cache-dir "$build/mypy-cache" -p tarantella ;;
  stubtest)
    export PYTHONPATH=$build/python OMP_NUM_THREADS=1
    exec "$py" -m mypy.stubtest --mypy-config-file "$src/tests/python/stubtest.ini" \
         --allowlist "$src/tests/python/stubtest_allowlist.txt" tarantella._tarantella ;;
  *) echo "typecheck.sh: unknown check '$what' (mypy or stubtest)" >&2; exit 2 ;;
esac
