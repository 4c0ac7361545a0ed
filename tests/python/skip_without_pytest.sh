#!/usr/bin/env bash
# Runs COMMAND (a pytest job) when PYTHON can import pytest; otherwise says
# so and exits 77, which CTest reports as skipped (SKIP_RETURN_CODE): a
# machine without pytest (the GPU machines we borrow have none) gets a
# skip with the reason, not a failure, and not a pass.
#   skip_without_pytest.sh PYTHON COMMAND...
set -u
python=${1:?usage: $0 PYTHON COMMAND...}
shift
if ! "$python" -c "import pytest" >/dev/null 2>&1; then
  echo "SKIP: pytest is missing: $python cannot import pytest (apt-get install python3-pytest," \
       "or pip install pytest in its environment)"
  exit 77
fi
exec "$@"
