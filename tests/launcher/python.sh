#!/usr/bin/env bash
# Python programs (Tarantella manual, section 8.5): PROGRAM.py runs under the
# Python the package was built for (python3 from PATH when none was
# recorded), --python-interpreter names another one or a wrapper,
# --python-interpreter "" runs the file itself, and a launcher in a build tree
# puts the tree's python folder first in every rank's PYTHONPATH.
#   bash python.sh PATH/TO/tarantella [RECORDED-PYTHON]
source "$(dirname "$0")/lib.sh"

RECORDED=${2:-}
DEFAULT_PYTHON=${RECORDED:-python3}
# A Python that certainly exists, by the path it reports as sys.executable
# (python3 in PATH may be a pyenv shim that runs another file).
SOME_PYTHON=${RECORDED:-$(python3 -c 'import sys; print(sys.executable)')}
LIMIT_MS=20000  # a 2-rank job takes about a second; a hang fails, not blocks

cd "$WORK" || exit 1
HERE=$(pwd -P)  # what the launcher's getcwd() sees
# Every rank reports on stderr, which is shown for all ranks.
cat >hello.py <<'PY'
import os, sys
rank = os.environ.get("OMPI_COMM_WORLD_RANK")
print("exe=%s rank=%s" % (sys.executable, rank), file=sys.stderr)
print("foo=%s rank=%s" % (os.environ.get("FOO"), rank), file=sys.stderr)
PY

# The default interpreter, on two real ranks.
run -n 2 --no-gpu -- hello.py
expect_status "hello.py exits 0" 0
expect_less "hello.py within the time limit" "$ELAPSED_MS" "$LIMIT_MS"
if [ -n "$RECORDED" ]; then
  expect_contains "rank 0 under the recorded Python" "$ERR" "exe=$RECORDED rank=0"
  expect_contains "rank 1 under the recorded Python" "$ERR" "exe=$RECORDED rank=1"
else
  expect_contains "rank 0 under python3 from PATH" "$ERR" "exe=$SOME_PYTHON rank=0"
  expect_contains "rank 1 under python3 from PATH" "$ERR" "exe=$SOME_PYTHON rank=1"
fi

run --dry-run -n 2 --no-gpu -- hello.py --epochs 1
expect_status "dry run of hello.py exits 0" 0
expect_contains "dry run: interpreter before the script" "$OUT" "-- $DEFAULT_PYTHON $HERE/hello.py --epochs 1"
expect_contains "dry run: interpreter note" "$OUT" "# $HERE/hello.py runs under $DEFAULT_PYTHON ("

# A wrapper with words of its own.
run -n 2 --no-gpu --python-interpreter "env FOO=1 $SOME_PYTHON" -- hello.py
expect_status "wrapper interpreter exits 0" 0
expect_less "wrapper within the time limit" "$ELAPSED_MS" "$LIMIT_MS"
expect_contains "wrapper ran: FOO on rank 0" "$ERR" "foo=1 rank=0"
expect_contains "wrapper ran: FOO on rank 1" "$ERR" "foo=1 rank=1"
expect_contains "wrapper's Python ran the script" "$ERR" "exe=$SOME_PYTHON rank=1"

# --python-interpreter "": a .py file that is really a shell script.
printf '#!/bin/sh\necho "binary rank=$OMPI_COMM_WORLD_RANK" >&2\n' >x.py
chmod +x x.py
run -n 2 --no-gpu --python-interpreter "" -- ./x.py
expect_status "x.py as a binary exits 0" 0
expect_less "x.py within the time limit" "$ELAPSED_MS" "$LIMIT_MS"
expect_contains "x.py ran itself on rank 0" "$ERR" "binary rank=0"
expect_contains "x.py ran itself on rank 1" "$ERR" "binary rank=1"
run --dry-run -n 1 --no-gpu --python-interpreter "" -- ./x.py
expect_contains "dry run: no interpreter" "$OUT" "--threads=auto --hide-gpus -- $HERE/x.py"
expect_contains "dry run: binary note" "$OUT" "runs as a program (--python-interpreter '')"

# A launcher in a build tree (a copy, so the real build tree is not touched):
# <tree>/bin/tarantella finds <tree>/python/tarantella/__init__.py.
mkdir -p tree/bin tree/python/tarantella
cp "$TARANTELLA" tree/bin/tarantella
echo 'WHERE = "build tree"' >tree/python/tarantella/__init__.py
TREE=$(cd tree && pwd -P)
cat >imports.py <<'PY'
import os, sys
import tarantella
print("rank=%s imported %s from %s" % (os.environ["OMPI_COMM_WORLD_RANK"], tarantella.WHERE,
                                      tarantella.__file__), file=sys.stderr)
print("PYTHONPATH=%s" % os.environ["PYTHONPATH"], file=sys.stderr)
PY
PYTHONPATH=/my/extra TARANTELLA=$TREE/bin/tarantella run -n 2 --no-gpu -- imports.py
expect_status "import from the build tree exits 0" 0
expect_less "import within the time limit" "$ELAPSED_MS" "$LIMIT_MS"
expect_contains "rank 1 imports the tree's package" "$ERR" \
  "rank=1 imported build tree from $TREE/python/tarantella/__init__.py"
expect_contains "tree first, the user's PYTHONPATH kept" "$ERR" "PYTHONPATH=$TREE/python:/my/extra"
PYTHONPATH=/my/extra TARANTELLA=$TREE/bin/tarantella run --dry-run -n 2 --no-gpu -- imports.py
expect_contains "dry run: PYTHONPATH assigned" "$OUT" "PYTHONPATH=$TREE/python:/my/extra"
expect_contains "dry run: PYTHONPATH forwarded" "$OUT" "-x PYTHONPATH"

# The launcher under test: PYTHONPATH is set exactly when its tree has the package.
run --dry-run -n 1 --no-gpu -- hello.py
if [ -f "$(dirname "$TARANTELLA")/../python/tarantella/__init__.py" ]; then
  package=$(cd "$(dirname "$TARANTELLA")/../python" && pwd -P)
  expect_contains "this build tree's package in PYTHONPATH" "$OUT" "PYTHONPATH=$package"
else
  expect_not_contains "no package next to this launcher: PYTHONPATH untouched" "$OUT" "PYTHONPATH"
fi

# Mistakes are found before anything starts (exit status 2).
run -n 1 -- missing.py
expect_status "missing script: exit status 2" 2
expect_contains "missing script: path and fix" "$ERR" \
  "program missing.py not found (looked for $HERE/missing.py and in PATH): check the spelling"
run -n 1 --python-interpreter "nosuch-python-$MARK -u" -- hello.py
expect_status "missing interpreter: exit status 2" 2
expect_contains "missing interpreter named" "$ERR" \
  "--python-interpreter 'nosuch-python-$MARK -u': nosuch-python-$MARK not found in PATH"
if [ -z "$RECORDED" ]; then
  mkdir nopython  # a PATH with what run() needs, and no python3
  for tool in date cat; do ln -s "$(command -v "$tool")" "nopython/$tool"; done
  PATH=$HERE/nopython run -n 1 -- hello.py
  expect_status "no python3 in PATH: exit status 2" 2
  expect_contains "no python3: suggests the flag" "$ERR" \
    "python3 not found in PATH (it runs hello.py): install Python 3, or name an interpreter with --python-interpreter"
fi

finish
