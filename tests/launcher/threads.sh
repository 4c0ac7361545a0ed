#!/usr/bin/env bash
# The thread rule: each rank gets max(1, cores / ranks on its node) as
# OMP_NUM_THREADS, unless the user set OMP_NUM_THREADS, which is kept.
source "$(dirname "$0")/lib.sh"

cores=$(nproc)
show='echo "omp=$OMP_NUM_THREADS"'

expected() { local t=$(( cores / $1 )); [ "$t" -lt 1 ] && t=1; echo "$t"; }

for ranks in 1 2 3; do
  run -n "$ranks" --no-gpu --output-on-all-devices -- sh -c "$show"
  want=$(expected "$ranks")
  count=$(grep -c "omp=$want\$" <<<"$OUT")
  if [ "$count" -eq "$ranks" ]; then pass "$ranks rank(s) on $cores cores: OMP_NUM_THREADS=$want each"
  else fail "$ranks rank(s) on $cores cores: expected $ranks lines omp=$want"; show_output; fi
done

OMP_NUM_THREADS=7 run -n 2 --no-gpu --output-on-all-devices -- sh -c "$show"
count=$(grep -c 'omp=7$' <<<"$OUT")
[ "$count" -eq 2 ] && pass "user's OMP_NUM_THREADS kept" || { fail "user's value not kept"; show_output; }

run -n 2 --no-gpu --output-on-all-devices -x OMP_NUM_THREADS=5 -- sh -c "$show"
count=$(grep -c 'omp=5$' <<<"$OUT")
[ "$count" -eq 2 ] && pass "-x OMP_NUM_THREADS kept" || { fail "-x value not kept"; show_output; }

finish
