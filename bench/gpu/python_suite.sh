#!/usr/bin/env bash
# The Python front end's pytest suite on a GPU machine, as a GPU user runs
# it: at 1 rank (the GPU's own, NCCL where the backend has it) and at 2
# ranks sharing the GPU (--ranks-per-gpu 2: the host-staged path; without
# the flag the launcher would put both ranks on the CPU), with the pipeline
# tests there too. The ctest jobs (python.pytest.nR) cannot serve here: they
# fix PYTHONPATH to the build tree, and the machines we borrow have no
# pytest (shared/GPU.md), so a pure-Python pytest comes in a folder of its
# own (scripts/device-pytest.sh makes it; the run tool carries it).
#
#   bench/gpu/python_suite.sh LAUNCHER PYTHON TESTDIR [PYTEST_DIR]
#
# TESTDIR: tests/python. PYTEST_DIR: a folder holding pytest, put after the
# build's package in the ranks' PYTHONPATH (the launcher puts its own
# package first). Exit status: the first failing run's, else 0.
set -uo pipefail
launcher=${1:?usage: $0 LAUNCHER PYTHON TESTDIR [PYTEST_DIR]}
py=${2:?usage}
tests=${3:?usage}
extra=${4:-}
export PYTHONDONTWRITEBYTECODE=1 OMP_NUM_THREADS=1
export TNT_TEST_LAUNCHER=$launcher TNT_TEST_PYTHON=$py
[ -n "$extra" ] && export PYTHONPATH=$extra${PYTHONPATH:+:$PYTHONPATH}
if ! "$py" -c 'import pytest' 2>/dev/null; then
  echo "python_suite: $py cannot import pytest (PYTEST_DIR: ${extra:-none}):" \
       "run scripts/device-pytest.sh where there is a network, and carry .device/" >&2
  exit 1
fi

# The files of python.pytest.nR (tests/python/CMakeLists.txt): every
# test_*.py but test_import.py (the import without torch) and the pipeline
# files (2 and 4 ranks).
files=() pipeline=()
for f in "$tests"/test_*.py; do
  case ${f##*/} in
    test_import.py | test_pipeline_checkpoint.py) ;;
    test_pipeline.py) pipeline+=("$f") ;;
    *) files+=("$f") ;;
  esac
done
[ ${#files[@]} -gt 0 ] || { echo "python_suite: no test files in $tests" >&2; exit 1; }

status=0
run() {  # run LABEL LAUNCHER-ARGS... -- FILES...
  local label=$1 rc
  shift
  echo "== python_suite: $label"
  "$launcher" "$@"
  rc=$?
  echo "== python_suite: $label: exit $rc"
  [ $status = 0 ] && status=$rc
}
pytest_cmd=("$py" -m pytest -q -p no:cacheprovider -rs --color=no)
# One rank goes on past a failure (every failure in one run); ranks stop at
# their first (-x), so that one rank's failure never leaves the others
# waiting in a collective.
run "1 rank" -n 1 -x TNT_COMM_TIMEOUT=60 -- "${pytest_cmd[@]}" "${files[@]}"
pytest_cmd+=(-x)
# Without a GPU (a dry run), the 2 ranks train on the CPU: the launcher
# refuses --ranks-per-gpu where no GPU is listed.
share=(--ranks-per-gpu 2) label="2 ranks sharing the GPU"
if ! [[ $(nvidia-smi -L 2>/dev/null) == GPU* ]]; then
  share=() label="2 ranks (no GPU seen by nvidia-smi: on the CPU)"
fi
run "$label" -n 2 "${share[@]}" -x TNT_COMM_TIMEOUT=60 -- \
  "${pytest_cmd[@]}" "${files[@]}" "${pipeline[@]}"
exit $status
