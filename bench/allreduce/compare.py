#!/usr/bin/env python3
"""Before/after table for bench_allreduce: two builds, runs alternating.

    bench/allreduce/compare.py [--high-priority] [--rounds 5] [--ranks 2]
        --launcher build/bin/tarantella BEFORE_BENCH AFTER_BENCH

Each round runs BEFORE then AFTER (each under the launcher, each printing
its own tnt-vs-raw table), so machine noise hits both alike. The raw
MPI_Allreduce loop is the same code in both binaries, but it runs with the
MPI settings of its binary's runtime: a build that sets
OMPI_MCA_mpi_yield_when_idle=1 slows its own raw loop too. The ratios against
"raw MPI with OpenMPI's default settings" therefore divide each build's tnt
time by the raw time of the build that leaves OpenMPI's defaults alone
(AFTER), taken in the same round; BEFORE's ratio against its own raw loop is
shown as well. Ratios are speed ratios (raw time / tnt time: above 1 means
tnt is faster), the median over rounds of each round's ratio.
--high-priority (root): sets this session's autogroup nice to -19, as
bench/train_step/run.sh does, so that other work on a shared machine
disturbs less.
"""
import argparse
import re
import statistics
import subprocess
import sys

# Today's rows: size, tnt time, raw time, ...; older builds printed no raw
# time (size, tnt time, tnt busbw, raw busbw, ...).
ROW = re.compile(r"^\| (\d+ [KM]iB) \| ([\d.]+) us \| ([\d.]+)( us)? \| ([\d.]+) \| ([\d.]+) \|")


def run(launcher, ranks, bench, extra, log):
    out = subprocess.run([launcher, "-n", str(ranks), "--", bench] + extra,
                         check=True, capture_output=True, text=True).stdout
    log.write(f"## {bench}\n{out}\n")
    rows = {}
    for line in out.splitlines():
        m = ROW.match(line)
        if not m:
            continue
        size, tnt_us = m.group(1), float(m.group(2))
        if m.group(4):  # with a raw time column
            rows[size] = {"tnt_us": tnt_us, "raw_us": float(m.group(3))}
        else:  # busbw columns: raw time = tnt time * tnt busbw / raw busbw
            tnt_bw, raw_bw = float(m.group(3)), float(m.group(5))
            rows[size] = {"tnt_us": tnt_us,
                          "raw_us": tnt_us * tnt_bw / raw_bw if raw_bw > 0 else float("inf")}
    return rows


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--high-priority", action="store_true")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--ranks", type=int, default=2)
    p.add_argument("--launcher", required=True)
    p.add_argument("--bench-args", default="")
    p.add_argument("--log", default="/dev/null", help="where to keep every run's own table")
    p.add_argument("before")
    p.add_argument("after")
    a = p.parse_args()
    if a.high_priority:
        with open("/proc/self/autogroup", "w") as f:
            f.write("-19")
        print("# scheduling:", open("/proc/self/autogroup").read().strip())
    print("#", subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())
    extra = a.bench_args.split()
    rounds = []
    log = open(a.log, "w")
    for r in range(a.rounds):
        before = run(a.launcher, a.ranks, a.before, extra, log)
        after = run(a.launcher, a.ranks, a.after, extra, log)
        rounds.append((before, after))
        print(f"# round {r + 1}/{a.rounds} done", file=sys.stderr, flush=True)
    sizes = list(rounds[0][1].keys())
    med = lambda xs: statistics.median(xs)
    print(f"\nallreduce float32 sum, N = {a.ranks} ranks, median over {a.rounds} rounds "
          "(each round: the bench's own median of 7 trials)")
    print("| size | before tnt us | after tnt us | raw MPI (default settings) us | "
          "before tnt / raw | after tnt / raw | before tnt / its own raw |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for s in sizes:
        raw = [af[s]["raw_us"] for _, af in rounds]
        b_ratio = med([af[s]["raw_us"] / b[s]["tnt_us"] for b, af in rounds])
        a_ratio = med([af[s]["raw_us"] / af[s]["tnt_us"] for _, af in rounds])
        own = med([b[s]["raw_us"] / b[s]["tnt_us"] for b, _ in rounds])
        print(f"| {s} | {med([b[s]['tnt_us'] for b, _ in rounds]):.1f} | "
              f"{med([af[s]['tnt_us'] for _, af in rounds]):.1f} | {med(raw):.1f} | "
              f"{b_ratio:.2f} | {a_ratio:.2f} | {own:.2f} |")

if __name__ == "__main__":
    main()
