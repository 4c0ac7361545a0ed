#!/usr/bin/python3
"""What the gradient allreduce costs in CPU time, and the bound that puts on
any data-parallel front end on this machine.

Runs the C++ front end (bench_train_step --variant tnt) at N ranks, one
intra-op thread each, and samples the CPU time (utime + stime from
/proc/PID/task/TID/stat) of every thread of every rank while it runs. The
communication engine's thread is named tnt-comm, so its share is the CPU the
allreduce payload takes (copies and sums of the gradient buckets). Beside
it, N plain LibTorch loops over 1/N of each global batch each (the
no-communication ceiling of front_ends.py) give the compute time of a step
with nothing else on the machine.

With one core per rank, a rank's core must do its compute (C per step) and
its share of the reduction (M per step), however well the two overlap in
time, so no front end that reduces on the CPU can exceed
    ceiling x C / (C + M).
The script prints C, M, that fraction and, given --ceiling-over-ddp (from
front_ends.py), the largest factor over PyTorch DDP such a front end could
reach here.

    bench/train_step/comm_cpu.py [--model mlp] [--ranks 2] [--epochs 4] [--ceiling-over-ddp 1.25]

CPU times do not depend on what else runs on the machine (wall times do), so
this measurement holds on a busy machine too.
"""
import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
BUILD = os.environ.get("TNT_BUILD_DIR", os.path.join(ROOT, "build"))
BENCH = os.path.join(BUILD, "bench", "train_step", "bench_train_step")
LAUNCHER = os.path.join(BUILD, "bin", "tarantella")
TICK = os.sysconf("SC_CLK_TCK")


def thread_times(pid):
    """{tid: (name, cpu seconds)} of a live process; {} once it is gone."""
    out = {}
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        name = stat[stat.index("(") + 1:stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2:].split()
        out[int(tid)] = (name, (int(fields[11]) + int(fields[12])) / TICK)
    return out


def ranks_of(bench_path):
    """PIDs of the running bench_train_step ranks (started by the launcher)."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        if argv and argv[0].decode(errors="replace") == bench_path and b"tnt" in argv:
            pids.append(int(entry))
    return pids


def result_line(out):
    lines = [l[7:] for l in out.splitlines() if l.startswith("RESULT ")]
    return json.loads(lines[0]) if len(lines) == 1 else None


def measure_tnt(args):
    cmd = [LAUNCHER, "--no-gpu", "-n", str(args.ranks), "--", BENCH, "--variant", "tnt",
           "--model", args.model, "--batch-size", str(args.batch_size), "--steps", str(args.steps),
           "--epochs", str(args.epochs)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    last = {}  # (pid, tid) -> (name, seconds): the latest sample of each thread
    while proc.poll() is None:
        for pid in ranks_of(BENCH):
            for tid, value in thread_times(pid).items():
                last[(pid, tid)] = value
        time.sleep(0.02)
    out, err = proc.communicate()
    result = result_line(out)
    if proc.returncode != 0 or result is None:
        sys.exit(f"the tnt run failed ({proc.returncode}):\n{out}\n{err}")
    by_name = {}
    for (pid, _), (name, seconds) in last.items():
        by_name.setdefault(name, {}).setdefault(pid, 0.0)
        by_name[name][pid] += seconds
    return result, by_name


def measure_plain(args):
    env = dict(os.environ, OMP_NUM_THREADS="1", TNT_NUM_THREADS="1")
    cmd = [BENCH, "--variant", "plain", "--model", args.model,
           "--batch-size", str(args.batch_size // args.ranks), "--steps", str(args.steps),
           "--epochs", str(args.epochs), "--threads", "1"]
    procs = [subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for _ in range(args.ranks)]
    rates = []
    for proc in procs:
        out, err = proc.communicate(timeout=900)
        result = result_line(out)
        if proc.returncode != 0 or result is None:
            sys.exit(f"the plain run failed ({proc.returncode}):\n{out}\n{err}")
        rates.append(result["samples_per_s"])
    return rates


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="mlp", choices=["lenet", "mlp"])
    parser.add_argument("--ranks", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--ceiling-over-ddp", type=float, default=0.0,
                        help="ceiling/DDP from front_ends.py, to print the bound over DDP")
    args = parser.parse_args()
    for path in (BENCH, LAUNCHER):
        if not os.path.exists(path):
            sys.exit(f"{path} is missing: build it first (scripts/build.sh bench_train_step tnt_launcher)")

    result, by_name = measure_tnt(args)
    steps = args.steps * args.epochs  # every epoch, the uncounted first one too, reduces
    print(f"tnt, {args.model}, {args.ranks} ranks: {result['samples_per_s']:.1f} samples/s; "
          f"CPU seconds per rank by thread name over {steps} steps:")
    for name, per_rank in sorted(by_name.items(), key=lambda kv: -sum(kv[1].values())):
        cells = ", ".join(f"{s:.2f}" for s in per_rank.values())
        print(f"  {name:16s} {cells}")
    if "tnt-comm" not in by_name:
        sys.exit("no thread named tnt-comm was seen: is this build older than the thread names?")
    comm_per_step = max(by_name["tnt-comm"].values()) / steps

    rates = measure_plain(args)
    ceiling = sum(rates)
    compute_per_step = (args.batch_size // args.ranks) / (ceiling / args.ranks)
    fraction = compute_per_step / (compute_per_step + comm_per_step)
    print(f"no-communication ceiling: {ceiling:.1f} samples/s ({args.ranks} plain loops at "
          f"batch {args.batch_size // args.ranks}); compute C = {1000 * compute_per_step:.1f} ms a step")
    print(f"allreduce payload M = {1000 * comm_per_step:.1f} ms of CPU a step per rank "
          f"(tnt-comm, the busiest rank)")
    print(f"bound for a front end that reduces on these cores: C/(C+M) = {fraction:.3f} of the ceiling")
    if args.ceiling_over_ddp > 0:
        print(f"with ceiling/DDP = {args.ceiling_over_ddp:.2f}x: at most "
              f"{fraction * args.ceiling_over_ddp:.3f}x DDP")


if __name__ == "__main__":
    main()
