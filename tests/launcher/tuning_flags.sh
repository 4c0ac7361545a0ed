#!/usr/bin/env bash
# --timeline, --autotune, --autotune-log and --mca reach a real rank: the
# files as absolute paths against the launcher's directory, the MCA setting
# as OpenMPI hands it to every process (OMPI_MCA_<name>).
source "$(dirname "$0")/lib.sh"

cd "$WORK" || exit 1
run -n 1 --no-gpu --timeline out/trace.json --autotune --autotune-log trials.log \
  --mca btl self,tcp -- /bin/sh -c 'env | grep -E "^(TNT_TIMELINE|TNT_AUTOTUNE|TNT_AUTOTUNE_LOG|OMPI_MCA_btl)="'
expect_status "a run with the tuning flags exits 0" 0
expect_contains "TNT_TIMELINE is absolute" "$OUT" "TNT_TIMELINE=$WORK/out/trace.json"
expect_contains "TNT_AUTOTUNE is set" "$OUT" "TNT_AUTOTUNE=true"
expect_contains "TNT_AUTOTUNE_LOG is absolute" "$OUT" "TNT_AUTOTUNE_LOG=$WORK/trials.log"
expect_contains "--mca reaches the rank" "$OUT" "OMPI_MCA_btl=self,tcp"

run -n 1 --no-gpu -- /bin/sh -c 'env | grep -E "^TNT_(TIMELINE|AUTOTUNE)" || echo none'
expect_contains "nothing set without the flags" "$OUT" "none"

run --autotune-log trials.log -n 1 -- /bin/true
expect_status "--autotune-log without --autotune is a usage error" 2
expect_contains "names the fix" "$ERR" "only applies with --autotune"

finish
