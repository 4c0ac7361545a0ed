#!/usr/bin/env bash
# The pip-torch leg of the test suite: the tree built and tested against the
# torch our users have, from PyPI, in a virtual environment, beside the
# README's Debian leg (scripts/test.sh).
#
#   scripts/test-pip.sh                 # requirements/torch-newest.txt, the suite less the
#                                       # torch-independent families (TNT_PIP_FULL=1: all)
#   scripts/test-pip.sh -R python       # ctest arguments pass through
#   TNT_TORCH_REQUIREMENTS=requirements/torch-2.11.txt scripts/test-pip.sh
#   scripts/test-pip.sh --prepare-only  # steps 1-2 only
#   scripts/test-pip.sh --build-only    # steps 1-4 without the suite
# (.ci/run runs the first during the Debian leg's build and the second,
# at the lowest priority, during the Debian leg's suite: docs/building.md)
#
# 1. the Debian packages (scripts/install-deps.sh; python3-venv among them);
# 2. one venv per torch version, in a fixed place ($TNT_VENVS, default
#    /opt/tnt-venvs/torch-<version>), made once and reused;
# 3. with TNT_PIP_ROUTE=1: `pip install .` into that venv (the venv route:
#    library, extension and launcher; about 10 minutes of a cold 2-core
#    build), then LeNet-5 in Python on 2 ranks with the venv's launcher. Off
#    in CI, which cannot fit it (docs/building.md, "CI's two legs");
# 4. the whole tree, the benchmarks included (CI compiles them here only:
#    they have no tests, and this is the torch users have), configured
#    against that torch in build-pip-<version>/ and the suite run there.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
req=${TNT_TORCH_REQUIREMENTS:-$root/requirements/torch-newest.txt}
torch_version=$(sed -n 's/^torch==\([^ ;]*\).*/\1/p' "$req")
if [ -z "$torch_version" ]; then
  echo "test-pip: $req pins no torch (a line torch==X.Y.Z): pin the version to test" >&2
  exit 2
fi
venv=${TNT_VENVS:-/opt/tnt-venvs}/torch-$torch_version
build=${TNT_BUILD_DIR:-$root/build-pip-$torch_version}
log() { echo "test-pip: $* ($(( $(date +%s) - start )) s)"; }
start=$(date +%s)

"$root/scripts/install-deps.sh"
if [ ! -x "$venv/bin/python3" ]; then
  mkdir -p "$(dirname "$venv")"
  /usr/bin/python3 -m venv "$venv"
fi
"$venv/bin/python3" -m pip install -q --disable-pip-version-check -r "$req"
py="$venv/bin/python3"
log "torch $("$py" -c 'import torch;print(torch.__version__)') in $venv"
phase=all
case "${1:-}" in
  --prepare-only) exit 0 ;;
  --build-only) phase=build; shift ;;
esac

if [ "${TNT_PIP_ROUTE:-0}" = 1 ]; then
  # The venv route, as a user takes it. Build isolation stays on: CMake asks
  # this venv's interpreter for its torch, so none is downloaded.
  "$py" -m pip install -q --disable-pip-version-check "$root"
  log "pip install . done"
  (cd /tmp && env -u PYTHONPATH "$venv/bin/tarantella" -n 2 -- "$root/examples/python/lenet5.py" \
     --epochs 1 2>&1 | tail -n 3)
  log "LeNet-5 through $venv/bin/tarantella done"
fi

# At -O1 (TNT_PIP_OPT): about a quarter less compile time than the Debian
# leg's -O2 on these LibTorch-heavy translation units, for tests whose time
# is in LibTorch's own kernels; the -O2 build and its warnings are the
# Debian leg's (docs/building.md, "CI's two legs").
if [ ! -f "$build/CMakeCache.txt" ]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
        -DCMAKE_CXX_FLAGS_RELEASE="${TNT_PIP_OPT:--O1} -DNDEBUG" \
        -DCMAKE_PREFIX_PATH="$("$py" -c 'import torch;print(torch.utils.cmake_prefix_path)')" \
        -DTNT_PYTHON_EXECUTABLE="$py" -DTNT_BUILD_BENCHMARKS=ON
fi
cmake --build "$build" -j "$(nproc)"
log "build done"
[ "$phase" = all ] || exit 0
cd "$build"
for v in $(compgen -e | grep '^SLURM_' || true); do unset "$v"; done
# Without arguments: the suite less what runs the same code against either
# torch (docs/building.md, "CI's two legs"): the launcher's process
# handling, the install tests, the chaos, host-fault and stall families
# (they wait out timeouts), the fuzzer, a rank's failure from Python, the
# 8-rank collectives (2 to 4 ranks stay) and the C++ LeNet-5's accuracy
# (the Python one, on the same engine, stays). The Debian leg runs all of
# them; TNT_PIP_FULL=1 runs them here too.
pip_skip='^(launcher|install|chaos|cluster)\.|^docs\.cluster|^faults\.(stalled|fuzz|unwritable)'
pip_skip+='|^python\.rank_failure$|^mpi\.collectives\.scatter_gather_n8$|^example\.lenet5_accuracy$'
if [ $# -eq 0 ]; then
  if [ "${TNT_PIP_FULL:-0}" = 1 ]; then set -- -LE long; else set -- -LE long -E "$pip_skip"; fi
fi
# -j 4: each test claims the cores it keeps busy (cmake/TntTestCores.cmake),
# at most 2 in all; the other two places are for tests that mostly wait.
ctest --output-on-failure -j 4 "$@"
log "suite done"
