#!/usr/bin/python3
"""Bounded resources over time: a rank's resident memory,
open file descriptors and threads over many short epochs of LeNet-5 with
callbacks, checkpoints and validation.

    resources.py --launcher build/bin/tarantella --lenet5 build/bin/lenet5 \\
                 [--epochs 500] [--ranks 2] [--first 10]

Each epoch is 2 optimizer steps (128 samples, batch 64) followed by
validation on 64 samples, a ModelCheckpoint file, a CSV row, a TensorBoard
event and a BackupAndRestore backup (every step). Rank 0's /proc/PID/status
(VmRSS, Threads) and /proc/PID/fd are sampled whenever the step log
(lenet5 --step-log) shows a new epoch; the table prints the samples at
epoch --first, at a few points between and at the last epoch, and the
growth of each from epoch --first to the end. Exit status 0 also when
something grew: this measures, the numbers go to docs/fault_tolerance.md.
Python 3 standard library only.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time


def rank0_pid(marker, program):
    tag = f"TNT_TEST_MARKER={marker}".encode()
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            if os.path.realpath(f"/proc/{name}/exe") != program:
                continue
            with open(f"/proc/{name}/environ", "rb") as f:
                env = f.read().split(b"\0")
        except OSError:
            continue
        if tag in env and b"OMPI_COMM_WORLD_RANK=0" in env:
            return int(name)
    return None


def sample(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            status = f.read()
        fds = len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return None
    rss = int(re.search(r"VmRSS:\s+(\d+) kB", status)[1])
    threads = int(re.search(r"Threads:\s+(\d+)", status)[1])
    return rss, fds, threads


def last_epoch(path):
    try:
        with open(path, "rb") as f:
            f.seek(max(0, os.path.getsize(path) - 200))
            lines = f.read().decode(errors="replace").splitlines()
    except OSError:
        return 0
    for line in reversed(lines):
        m = re.fullmatch(r"step (\d+) \d+ attempt \d+", line)
        if m:
            return int(m[1])
    return 0


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--launcher", required=True)
    p.add_argument("--lenet5", required=True)
    p.add_argument("--epochs", type=int, default=500)
    p.add_argument("--ranks", type=int, default=2)
    p.add_argument("--first", type=int, default=10, help="the epoch growth is measured from")
    args = p.parse_args()
    program = os.path.realpath(args.lenet5)
    work = tempfile.mkdtemp(prefix="tnt-resources.")
    marker = f"tnt-resources-{os.getpid()}"
    steps = os.path.join(work, "steps.log")
    cmd = [os.path.realpath(args.launcher), "-n", str(args.ranks), "--no-gpu",
           "-x", f"TNT_TEST_MARKER={marker}", "--", program,
           "--epochs", str(args.epochs), "--train-size", "128", "--val-size", "64",
           "--test-size", "64", "--batch-size", "64", "--verbose", "0",
           "--checkpoint-dir", os.path.join(work, "ckpt"),
           "--csv-log", os.path.join(work, "log.csv"),
           "--tensorboard", os.path.join(work, "tb"),
           "--backup-dir", os.path.join(work, "backup"), "--backup-every", "1",
           "--step-log", steps]
    print("command:", " ".join(cmd), flush=True)
    samples = {}  # epoch -> (rss kB, fds, threads), taken while the epoch runs
    start = time.monotonic()
    try:
        with open(os.path.join(work, "job.log"), "w") as out:
            job = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT,
                                   stdin=subprocess.DEVNULL)
            pid = None
            while job.poll() is None:
                pid = pid or rank0_pid(marker, program)
                epoch = last_epoch(steps)
                if pid and epoch and epoch not in samples:
                    s = sample(pid)
                    if s:
                        samples[epoch] = s
                time.sleep(0.005)
        if job.returncode != 0:
            with open(os.path.join(work, "job.log")) as f:
                print(f.read())
            print(f"the job failed (exit status {job.returncode})")
            return 1
        elapsed = time.monotonic() - start
        epochs = sorted(samples)
        first = min((e for e in epochs if e >= args.first), default=None)
        last = epochs[-1] if epochs else None
        if first is None or last is None or last <= first:
            print(f"too few samples: {epochs[:5]}...")
            return 1
        print(f"{args.epochs} epochs at {args.ranks} ranks in {elapsed:.0f} s; "
              f"{len(samples)} epochs sampled (rank 0, pid {pid})")
        print("| epoch | RSS (MiB) | open fds | threads |")
        print("| ---: | ---: | ---: | ---: |")
        shown = [e for e in epochs if e in (1, 2, first, last) or e % 100 == 0]
        for e in sorted(set(shown)):
            rss, fds, threads = samples[e]
            print(f"| {e} | {rss / 1024:.1f} | {fds} | {threads} |")
        r0, f0, t0 = samples[first]
        r1, f1, t1 = samples[last]
        print(f"from epoch {first} to {last}: RSS {r0} -> {r1} kB ({100.0 * (r1 - r0) / r0:+.2f} %), "
              f"fds {f0} -> {f1} ({f1 - f0:+d}), threads {t0} -> {t1} ({t1 - t0:+d})")
        later = [s for e, s in samples.items() if e >= first]
        print(f"from epoch {first} on: open fds between {min(s[1] for s in later)} and "
              f"{max(s[1] for s in later)}, threads between {min(s[2] for s in later)} and "
              f"{max(s[2] for s in later)} (a sample may catch a checkpoint or backup file open)")
        peak = max(s[0] for e, s in samples.items() if e >= first)
        print(f"largest RSS from epoch {first} on: {peak} kB "
              f"({100.0 * (peak - r0) / r0:+.2f} % over epoch {first})")
        return 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
