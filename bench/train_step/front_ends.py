#!/usr/bin/python3
"""The two front ends side by side, and the peer: one table of samples/s of
the C++ front end (bench_train_step --variant tnt), the Python front end
(python_bench.py: tnt.Model from Python over the same engine) and PyTorch DDP
(ddp_bench.py, gloo), each at N ranks/processes with one thread each, over
the same networks, data and batch. Rounds are interleaved (the order rotates)
and every ratio is the median of per-round ratios.

Beside them, the no-communication ceiling: N plain LibTorch loops
(bench_train_step --variant plain, one thread each) run at once, each over
its 1/N of the global batch, summed. No data-parallel front end can beat it
on this machine, so ceiling/DDP is the most any front end can be above DDP.

    bench/train_step/front_ends.py [--high-priority] [--rounds 5] [--ranks 2] [--models lenet,mlp]

Builds nothing: build tnt_launcher, bench_train_step and tnt_python first.
The build folder is ./build, or $TNT_BUILD_DIR.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
BUILD = os.environ.get("TNT_BUILD_DIR", os.path.join(ROOT, "build"))
PYTHON = os.environ.get("TNT_BENCH_PYTHON", "/usr/bin/python3")
LAUNCHER = os.path.join(BUILD, "bin", "tarantella")
STEPS = {"lenet": 20, "mlp": 4}


def command(variant, model, ranks):
    common = ["--model", model, "--batch-size", "256", "--steps", str(STEPS[model]),
              "--epochs", "3"]
    launch = [LAUNCHER, "--no-gpu", "-n", str(ranks), "--"]
    return {
        "cpp": launch + [os.path.join(BUILD, "bench", "train_step", "bench_train_step")]
               + common + ["--variant", "tnt"],
        "python": launch + [PYTHON, os.path.join(HERE, "python_bench.py")] + common,
        "ddp": [PYTHON, os.path.join(HERE, "ddp_bench.py")] + common + ["--nproc", str(ranks)],
    }[variant]


def ceiling(model, ranks):
    """N plain loops at once over B/N each: samples/s summed."""
    env = dict(os.environ, OMP_NUM_THREADS="1", TNT_NUM_THREADS="1")
    cmd = [os.path.join(BUILD, "bench", "train_step", "bench_train_step"), "--variant", "plain",
           "--model", model, "--batch-size", str(256 // ranks), "--steps", str(STEPS[model]),
           "--epochs", "3", "--threads", "1"]
    procs = [subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for _ in range(ranks)]
    total = 0.0
    for proc in procs:
        out, err = proc.communicate(timeout=600)
        lines = [l[7:] for l in out.splitlines() if l.startswith("RESULT ")]
        if proc.returncode != 0 or len(lines) != 1:
            sys.exit(f"ceiling {model} failed ({proc.returncode}):\n{out}\n{err}")
        total += json.loads(lines[0])["samples_per_s"]
    return {"samples_per_s": total, "threads": 1}


def run(variant, model, ranks):
    if variant == "ceiling":
        return ceiling(model, ranks)
    env = dict(os.environ, OMP_NUM_THREADS="1", TNT_NUM_THREADS="1")
    out = subprocess.run(command(variant, model, ranks), env=env, capture_output=True,
                         text=True, timeout=600)
    lines = [l[7:] for l in out.stdout.splitlines() if l.startswith("RESULT ")]
    if out.returncode != 0 or len(lines) != 1:
        sys.exit(f"{variant} {model} failed ({out.returncode}):\n{out.stdout}\n{out.stderr}")
    return json.loads(lines[0])


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--high-priority", action="store_true",
                   help="root: this session's scheduling weight over other sessions")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--ranks", type=int, default=2)
    p.add_argument("--models", default="lenet,mlp")
    a = p.parse_args()
    if a.high_priority:
        with open("/proc/self/autogroup", "w") as f:
            f.write("-19")
    variants = ["cpp", "python", "ddp", "ceiling"]
    results = {}
    for model in a.models.split(","):
        rs = {v: [] for v in variants}
        for k in range(a.rounds):
            for v in variants[k % 4:] + variants[:k % 4]:
                r = run(v, model, a.ranks)
                if r["threads"] != 1:
                    sys.exit(f"{v} {model}: {r['threads']} threads, want 1")
                rs[v].append(r)
                print(f"round {k + 1} {model} {v:6s} {r['samples_per_s']:9.1f} samples/s "
                      f"(load {os.getloadavg()[0]:.2f})", file=sys.stderr, flush=True)
        sums = {tuple(r["checksum"]) for v in variants[:3] for r in rs[v]}
        if len({s[1] for s in sums}) != 1:
            sys.exit(f"{model}: the variants saw different data: {sums}")
        results[model] = rs

    def ratio(rs, num, den):
        return statistics.median(n["samples_per_s"] / d["samples_per_s"]
                                 for n, d in zip(rs[num], rs[den]))

    print(f"{a.ranks} ranks, global batch 256, {a.rounds} rounds, one thread per rank\n")
    print("| model | C++ front end | Python front end | PyTorch DDP | no-comm ceiling | "
          "Python/C++ | Python/DDP | ceiling/DDP | Python/ceiling |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for model, rs in results.items():
        med = {v: statistics.median(r["samples_per_s"] for r in rs[v]) for v in variants}
        print(f"| {model} | {med['cpp']:.1f} | {med['python']:.1f} | {med['ddp']:.1f} | "
              f"{med['ceiling']:.1f} | {ratio(rs, 'python', 'cpp'):.3f} | "
              f"{ratio(rs, 'python', 'ddp'):.2f}x | {ratio(rs, 'ceiling', 'ddp'):.2f}x | "
              f"{ratio(rs, 'python', 'ceiling'):.3f} |")


if __name__ == "__main__":
    main()
