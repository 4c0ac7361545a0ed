#!/usr/bin/env bash
# A/B of 2-rank tarantella configurations of one model, interleaved: each
# round runs every configuration once (bench_train_step --variant tnt under
# `tarantella -n 2`), then prints each one's median and its paired ratio to
# the first (the median of per-round ratios, and in how many rounds it won).
#
#   bench/train_step/ab.sh [--high-priority] MODEL ROUNDS NAME=LAUNCHER-ARGS...
#
# LAUNCHER-ARGS are extra launcher flags (word-split), e.g. to run an older
# build of the library next to this one:
#   cp -a build/src/libtarantella.so* /tmp/old/     # at the old commit
#   bench/train_step/ab.sh --high-priority lenet 8 \
#       "old=-x LD_LIBRARY_PATH=/tmp/old" "new=" \
#       "yield=-x LD_LIBRARY_PATH=/tmp/old -x OMPI_MCA_mpi_yield_when_idle=1"
# (LD_LIBRARY_PATH wins over the binaries' RUNPATH.) STEPS (default 40 for
# lenet, 4 for mlp) and EPOCHS (default 6 for lenet, 4 for mlp; the first is
# not timed) set the run length; short runs are noisy on a shared machine.
# RANKS (default 2) sets the number of ranks.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=${TNT_BUILD_DIR:-$root/build}
if [ "${1:-}" = "--high-priority" ]; then
  shift
  echo -19 > /proc/self/autogroup
fi
if [ $# -lt 3 ]; then
  sed -n '2,18p' "${BASH_SOURCE[0]}" >&2
  exit 2
fi
model=$1 rounds=$2 ranks=${RANKS:-2}
shift 2
case $model in
  lenet) steps=${STEPS:-40} epochs=${EPOCHS:-6} ;;
  mlp) steps=${STEPS:-4} epochs=${EPOCHS:-4} ;;
  *) echo "ab.sh: model '$model' is not lenet or mlp" >&2; exit 2 ;;
esac
run() {
  # shellcheck disable=SC2086  # launcher args are meant to be word-split
  OMP_NUM_THREADS=1 TNT_NUM_THREADS=1 "$build/bin/tarantella" --no-gpu -n "$ranks" $1 -- \
    "$build/bench/train_step/bench_train_step" --model "$model" --batch-size 256 \
    --steps "$steps" --epochs "$epochs" --variant tnt |
    sed -n 's/^RESULT //p' | python3 -c 'import sys, json; print(json.load(sys.stdin)["samples_per_s"])'
}
log=$(mktemp)
trap 'rm -f "$log"' EXIT
echo "# $model at $ranks ranks, $rounds rounds of $steps steps x $epochs epochs; $(uptime)"
for i in $(seq "$rounds"); do
  line="round $i"
  for v in "$@"; do
    r=$(run "${v#*=}")
    echo "${v%%=*} $i $r" >> "$log"
    line="$line ${v%%=*}:$r"
  done
  echo "$line"
done
python3 - "$log" "${1%%=*}" <<'EOF'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
first = sys.argv[2]
names = list(dict.fromkeys(r[0] for r in rows))
by = {n: {int(r[1]): float(r[2]) for r in rows if r[0] == n} for n in names}
for n in names:
    line = f"{n}: median {statistics.median(by[n].values()):.1f} samples/s"
    if n != first:
        ratios = [by[n][k] / by[first][k] for k in by[first]]
        wins = sum(x > 1 for x in ratios)
        line += f"; / {first}: {statistics.median(ratios):.3f} (faster in {wins} of {len(ratios)})"
    print(line)
EOF
