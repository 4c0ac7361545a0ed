#!/usr/bin/python3
"""Two builds of the tree side by side (a refactoring's before and after):
bench_train_step --variant tnt of each build, under each build's own
launcher, interleaved round by round, for LeNet-5 and the MLP at 1 and 2
ranks. Prints each build's median samples/s and the paired ratio new/old
(median of per-round ratios). ab.sh swaps only the library, which works only
while the ABI stays the same; this runs each build's own binaries.

    bench/train_step/ab_builds.py [--high-priority] [--rounds 5] OLD_BUILD NEW_BUILD
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

STEPS = {"lenet": 20, "mlp": 4}


def run(build, model, ranks):
    cmd = [os.path.join(build, "bin", "tarantella"), "--no-gpu", "-n", str(ranks), "--",
           os.path.join(build, "bench", "train_step", "bench_train_step"), "--model", model,
           "--batch-size", "256", "--steps", str(STEPS[model]), "--epochs", "3",
           "--variant", "tnt"]
    env = dict(os.environ, OMP_NUM_THREADS="1", TNT_NUM_THREADS="1")
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    lines = [l[7:] for l in out.stdout.splitlines() if l.startswith("RESULT ")]
    if out.returncode != 0 or len(lines) != 1:
        sys.exit(f"{' '.join(cmd)} failed ({out.returncode}):\n{out.stdout}\n{out.stderr}")
    return json.loads(lines[0])["samples_per_s"]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--high-priority", action="store_true")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("old")
    p.add_argument("new")
    a = p.parse_args()
    if a.high_priority:
        with open("/proc/self/autogroup", "w") as f:
            f.write("-19")
    print("| model | ranks | old samples/s | new samples/s | new/old (paired median) | min – max |")
    print("|---|---:|---:|---:|---:|---:|")
    for model in ("lenet", "mlp"):
        for ranks in (1, 2):
            old, new = [], []
            for k in range(a.rounds):
                pair = [(a.old, old), (a.new, new)]
                for build, into in (pair if k % 2 == 0 else pair[::-1]):
                    into.append(run(build, model, ranks))
                print(f"{model} {ranks} round {k + 1}: old {old[-1]:.1f} new {new[-1]:.1f}",
                      file=sys.stderr, flush=True)
            ratios = [n / o for n, o in zip(new, old)]
            print(f"| {model} | {ranks} | {statistics.median(old):.1f} | "
                  f"{statistics.median(new):.1f} | {statistics.median(ratios):.3f} | "
                  f"{min(ratios):.3f} – {max(ratios):.3f} |", flush=True)


if __name__ == "__main__":
    main()
