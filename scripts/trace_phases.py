#!/usr/bin/env python3
"""Per rank, the share of each compute phase in the training steps of a
Tarantella timeline (TNT_TIMELINE / --timeline): how much of a step went to
"wait for data" (the input pipeline, where nothing prefetches), forward,
backward, waiting for gradients and the optimizer step.

    scripts/trace_phases.py TRACE [--skip 1]

A step is the time from one "wait for data" slice's start to the next
one's (the last step ends with its last slice). `--skip` leaves out the
first steps of each rank (warm-up). Standard library only.
"""
import argparse
import json
from collections import defaultdict

PHASES = ["wait for data", "forward", "backward", "wait for gradients", "optimizer step"]


def steps_of(slices):
    """Splits one rank's compute slices (sorted by start) into steps."""
    steps = []
    for e in slices:
        if e["name"] == "wait for data" or not steps:
            steps.append([])
        steps[-1].append(e)
    return steps


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("trace")
    p.add_argument("--skip", type=int, default=1)
    a = p.parse_args()
    with open(a.trace) as f:
        events = json.load(f)["traceEvents"]
    by_rank = defaultdict(list)
    for e in events:
        if e.get("ph") == "X" and e.get("tid") == 0:
            by_rank[e["pid"]].append(e)
    for rank in sorted(by_rank):
        steps = steps_of(sorted(by_rank[rank], key=lambda e: e["ts"]))[a.skip:]
        if not steps:
            raise SystemExit(f"{a.trace}: rank {rank} has no steps after --skip {a.skip}")
        total = sum(s[-1]["ts"] + s[-1]["dur"] - s[0]["ts"] for s in steps)
        phase = defaultdict(float)
        for s in steps:
            for e in s:
                phase[e["name"]] += e["dur"]
        parts = ", ".join(f"{n} {100 * phase[n] / total:.2f} %" for n in PHASES if n in phase)
        print(f"rank {rank}: {len(steps)} steps, {total / 1e3 / len(steps):.1f} ms/step; "
              f"{parts}")


if __name__ == "__main__":
    main()
