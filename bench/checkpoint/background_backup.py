#!/usr/bin/env python3
"""What a backup costs the training: BackupAndRestore writing synchronously
against writing in the background, beside a fit without backups, in one run
with the modes interleaved round by round.

The model of the checkpoint issue: two Linear(4096, 4096) (134 MB of
weights, as much again of momentum), SGD with momentum, batch 64, MSE on
random data, a backup every --save-freq steps into --dir (a disk, not a
tmpfs: the default is under /var/tmp).

    tarantella -n 1 -- python3 bench/checkpoint/background_backup.py \\
        [--steps 100 --save-freq 20 --rounds 2 --dir /var/tmp/tnt-backup-bench]

Per mode and round: the median step time, the time the training thread is
blocked at each backup (that step's time minus the median step), and the
whole fit() (which waits for the last background write). Prints a JSON line
per run ("RESULT {...}") and a Markdown table with the two ratios the issue
sets: blocked per backup, background / synchronous (goal <= 0.10), and the
fit with background backups / (the fit without + one synchronous write)
(goal <= 1.15).
"""
import argparse
import json
import os
import shutil
import statistics
import time

import torch

import tarantella as tnt


class StepClock(tnt.callbacks.Callback):
    """perf_counter at every step's end, after the callbacks before it."""

    def __init__(self) -> None:
        super().__init__(aggregate_logs=False)
        self.ends: list = []

    def on_train_batch_begin(self, batch, logs=None):  # noqa: D102
        if not self.ends:
            self.ends.append(time.perf_counter())

    def on_train_batch_end(self, batch, logs=None):  # noqa: D102
        self.ends.append(time.perf_counter())


def one_fit(mode, x, y, args):
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(4096, 4096), torch.nn.ReLU(),
                              torch.nn.Linear(4096, 4096))
    model = tnt.Model(net)
    model.compile(optimizer=torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9),
                  loss=torch.nn.MSELoss())
    clock = StepClock()
    callbacks = []
    if mode != "none":
        shutil.rmtree(args.dir, ignore_errors=True)
        callbacks.append(tnt.callbacks.BackupAndRestore(
            args.dir, save_freq=args.save_freq, write_in_background=(mode == "background")))
    callbacks.append(clock)
    start = time.perf_counter()
    model.fit(x, y, batch_size=args.batch_size, epochs=1, shuffle=False, verbose=0,
              callbacks=callbacks)
    fit_s = time.perf_counter() - start
    steps = [b - a for a, b in zip(clock.ends, clock.ends[1:])]
    # Step k (1-based) ends with the backup when k % save_freq == 0; the
    # median step is taken over the others. A backup's cost is what step k
    # and step k + 1 take beyond two median steps: work the snapshot queued
    # on a GPU's stream (its copy to pinned memory) shows in step k + 1.
    after = {k for k in range(args.save_freq, len(steps) + 1, args.save_freq)}
    median = statistics.median([t for k, t in enumerate(steps, 1)
                                if k not in after and k - 1 not in after] or steps)
    blocked = [steps[k - 1] + (steps[k] if k < len(steps) else median) - 2 * median
               for k in sorted(after)]
    return {"mode": mode, "median_step_ms": round(median * 1e3, 2),
            "blocked_ms": [round(b * 1e3, 1) for b in blocked], "fit_s": round(fit_s, 3)}


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=100)
    p.add_argument("--save-freq", type=int, default=20)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--dir", default="/var/tmp/tnt-backup-bench")
    args = p.parse_args()
    if args.steps < args.save_freq:
        raise SystemExit(f"--steps {args.steps} is below --save-freq {args.save_freq}: "
                         "no backup would be taken; raise --steps")
    g = torch.Generator().manual_seed(0)
    n = args.steps * args.batch_size
    x = torch.randn(n, 4096, generator=g)
    y = torch.randn(n, 4096, generator=g)
    modes = ["none", "sync", "background"]
    results = {m: [] for m in modes}
    for r in range(args.rounds):
        order = modes[r % 3:] + modes[:r % 3]
        for mode in order:
            res = one_fit(mode, x, y, args)
            res["round"] = r
            if tnt.is_master_rank():
                print("RESULT " + json.dumps(res), flush=True)
            results[mode].append(res)
    shutil.rmtree(args.dir, ignore_errors=True)
    if not tnt.is_master_rank():
        return

    def mean_blocked(mode):
        # The last backup of a fit coincides with its end; the mean is over
        # the backups taken while training goes on.
        vals = [b for res in results[mode] for b in res["blocked_ms"][:-1]]
        return statistics.mean(vals) if vals else float("nan")

    fit = {m: statistics.median(res["fit_s"] for res in results[m]) for m in modes}
    sync_ms, bg_ms = mean_blocked("sync"), mean_blocked("background")
    print(f"\n| {args.steps} steps, backup every {args.save_freq}, {args.rounds} rounds, "
          f"dir {args.dir} | median step (ms) | blocked per backup (ms) | fit (s) |")
    print("|---|---:|---:|---:|")
    for m in modes:
        step = statistics.median(res["median_step_ms"] for res in results[m])
        blocked = "—" if m == "none" else f"{mean_blocked(m):.1f}"
        print(f"| {m} | {step:.1f} | {blocked} | {fit[m]:.2f} |")
    # Backups closer together than one write queue behind each other (a
    # submit waits for the write before it): the background figure then
    # measures the queue, not the snapshot.
    interval_ms = args.save_freq * statistics.median(res["median_step_ms"]
                                                     for res in results["none"])
    print(f"\ninterval between backups: {interval_ms:.0f} ms; one synchronous write: "
          f"{sync_ms:.0f} ms")
    if interval_ms < 1.5 * sync_ms:
        print(f"NOTE: the backups come faster than they are written: the background figures "
              f"include waiting for the write before; raise --save-freq (and --steps) to at "
              f"least {int(1.5 * sync_ms / interval_ms * args.save_freq) + 1}")
    print(f"blocked per backup, background / sync: {bg_ms / sync_ms:.3f} (goal <= 0.10)")
    budget = fit["none"] + sync_ms / 1e3
    print(f"fit with background backups / (fit without + one write): "
          f"{fit['background'] / budget:.3f} (goal <= 1.15)")


if __name__ == "__main__":
    main()
