#!/usr/bin/env bash
# --dry-run prints the exact mpirun command and environment, shell-quoted so
# that running the printed text reproduces the argv and values exactly.
source "$(dirname "$0")/lib.sh"

cd "$WORK" || exit 1
printf '#!/bin/sh\n' >prog && chmod +x prog

run --dry-run -n 3 -x A=1 "B=two words" --fusion-threshold 64 -- ./prog arg
echo "--- dry-run output:"; echo "$OUT"
expect_status "dry run exits 0" 0
expect_contains "3 ranks" "$OUT" "-np 3"
expect_contains "A exported" "$OUT" "-x A "
expect_contains "B exported" "$OUT" "-x B "
expect_contains "A assigned" "$OUT" "A=1"
expect_contains "B keeps its space" "$OUT" "'B=two words'"
expect_contains "fusion threshold in KiB" "$OUT" "TNT_FUSION_THRESHOLD=64"
expect_contains "threshold forwarded" "$OUT" "-x TNT_FUSION_THRESHOLD"
expect_contains "stdout (a file here) is no terminal" "$OUT" "TNT_STDOUT_IS_TERMINAL=false"
expect_contains "terminal flag forwarded" "$OUT" "-x TNT_STDOUT_IS_TERMINAL"
expect_contains "no core binding" "$OUT" "--bind-to none"
expect_contains "oversubscription allowed" "$OUT" "--oversubscribe"
expect_contains "program made absolute" "$OUT" "-- $WORK/prog arg"
expect_contains "ranks go through the wrapper" "$OUT" "--rank-exec"

# Run the printed text with a fake mpirun that records what it received.
mkdir fakebin
cat >fakebin/mpirun <<'FAKE'
#!/bin/sh
printf 'A=[%s]\nB=[%s]\nQ=[%s]\nT=[%s]\n' "$A" "$B" "$Q" "$TNT_FUSION_THRESHOLD"
for arg; do printf 'arg=[%s]\n' "$arg"; done
FAKE
chmod +x fakebin/mpirun
replayed=$(A= B= Q= PATH="$WORK/fakebin:$PATH" sh -c "$OUT")
expect_contains "replayed value of B is intact" "$replayed" "B=[two words]"
expect_contains "replayed value of A" "$replayed" "A=[1]"
expect_contains "replayed threshold" "$replayed" "T=[64]"
expect_contains "replayed program argument" "$replayed" "arg=[arg]"

# Values with quotes survive the round trip too.
run --dry-run -n 1 --no-gpu -x "Q=it's \"quoted\" \$HOME" -- ./prog
replayed=$(PATH="$WORK/fakebin:$PATH" sh -c "$OUT")
expect_contains "quotes and dollar signs survive" "$replayed" "Q=[it's \"quoted\" \$HOME]"

# GPU rule through the real binary, with the GPU count fixed for the test
# (devices.sh has the whole table and the explicit requests).
run --dry-run --assume-gpus 0 -- ./prog
expect_contains "no GPU: one rank" "$OUT" "-np 1"
expect_contains "no GPU: CPU" "$OUT" "TNT_USE_GPU=false"
expect_not_contains "no GPU: silent, as in the manual" "$ERR" "WARNING"
run --dry-run --assume-gpus 4 -- ./prog
expect_contains "4 GPUs: 4 ranks" "$OUT" "-np 4"
expect_contains "4 GPUs: on GPU where LibTorch can" "$OUT" "TNT_USE_GPU=auto"
expect_not_contains "4 GPUs: no warning" "$ERR" "WARNING"
run --dry-run --assume-gpus 2 -n 3 -- ./prog
expect_contains "more ranks than GPUs: CPU" "$OUT" "TNT_USE_GPU=false"
expect_contains "more ranks than GPUs: warning" "$ERR" "3 ranks per node requested but this node has 2 GPUs"
run --dry-run --assume-gpus 2 -n 3 --no-gpu -- ./prog
expect_not_contains "--no-gpu: silent" "$ERR" "WARNING"

finish
