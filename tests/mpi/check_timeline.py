#!/usr/bin/env python3
"""Checks a timeline written with TNT_TIMELINE / --timeline: it is valid
Chrome-trace JSON (what chrome://tracing and ui.perfetto.dev load), has one
process per rank with compute and allreduce tracks, the step phases, and
allreduce slices that overlap backward slices of the same rank.

With --stages P (rank r is stage r of one pipeline), instead: every stage
has, in each of STEPS steps, a "forward i" and a "backward i" slice for
each of the M micro-batches i (forward before backward), the receives that
wait for a neighbour ("receive activations i (from stage r-1)", "receive
gradients i (from stage r+1)") and the sends on the "stage link" track; the
slices of the compute track do not overlap, and no whole-step "forward" or
"backward" is left. A stage after the first splits its backward: "backward
i" to its input's gradient, which it sends, then "weights i".

    check_timeline.py TRACE RANKS
    check_timeline.py TRACE RANKS --stages P --micro-batches M --steps STEPS
"""
import argparse
import collections
import json


def check_stages(events, slices, stages, micro, steps):
    for r in range(stages):
        mine = [e for e in slices if e["pid"] == r]
        count = collections.Counter((e["tid"], e["name"]) for e in mine)
        expected = {(0, f"{kind} {i}") for kind in ("forward", "backward") for i in range(micro)}
        if r > 0:
            expected |= {(0, f"receive activations {i} (from stage {r - 1})") for i in range(micro)}
            # The split backward: the input's gradient, sent, then the weights'.
            expected |= {(0, f"weights {i}") for i in range(micro)}
            expected |= {(2, f"send gradients {i} (to stage {r - 1})") for i in range(micro)}
        if r < stages - 1:
            expected |= {(0, f"receive gradients {i} (from stage {r + 1})") for i in range(micro)}
            expected |= {(2, f"send activations {i} (to stage {r + 1})") for i in range(micro)}
        for key in sorted(expected):
            assert count[key] == steps, f"stage {r}: {count[key]} slices {key}, expected {steps}"
        for name in ("forward", "backward"):
            assert count[(0, name)] == 0, f"stage {r} still has whole-step '{name}' slices"
        unexpected = {k for k in count if k[0] == 2 or k[1].startswith("weights")} - expected
        assert not unexpected, f"stage {r}: unexpected stage link slices {sorted(unexpected)}"
        tracks = {(e["tid"], e["args"]["name"]) for e in events
                  if e.get("name") == "thread_name" and e["pid"] == r}
        assert (2, "stage link") in tracks, f"stage {r} has no named stage link track: {tracks}"
        # The k-th forward of micro-batch i ends before its k-th backward.
        for i in range(micro):
            f = sorted(e["ts"] + e["dur"] for e in mine if e["name"] == f"forward {i}")
            b = sorted(e["ts"] for e in mine if e["name"] == f"backward {i}")
            assert all(x <= y for x, y in zip(f, b)), f"stage {r}: backward {i} before forward {i}"
        # A stage after the first sends its input's gradient before it
        # computes its weights' gradients: "backward i" ends where the input's
        # gradient is done, and "weights i" begins there; the "send gradients
        # i" is posted in between, before the weights' gradients end (1 us of
        # rounding either way).
        if r > 0:
            for i in range(micro):
                b = sorted(e["ts"] + e["dur"] for e in mine if e["name"] == f"backward {i}")
                w = sorted((e["ts"], e["ts"] + e["dur"]) for e in mine
                           if e["name"] == f"weights {i}")
                sent = sorted(e["ts"] for e in mine
                              if e["name"] == f"send gradients {i} (to stage {r - 1})")
                for x, y, (z0, z1) in zip(b, sent, w):
                    assert x - 1 <= z0 <= y + 1 and y <= z1 + 1, (
                        f"stage {r}: the gradient of micro-batch {i}'s input was sent at {y}, "
                        f"not after its backward's end {x} and before its weights' end {z1}")
        # The micro-batches' slices and the waits share one thread.
        compute = sorted((e["ts"], e["ts"] + e["dur"], e["name"]) for e in mine
                         if e["tid"] == 0 and (e["name"].split(" ")[0] in
                                               ("forward", "backward", "weights",
                                                "receive")))
        for (b0, e0, n0), (b1, _, n1) in zip(compute, compute[1:]):
            assert b1 >= e0 - 1, f"stage {r}: '{n0}' ({b0}..{e0}) overlaps '{n1}' ({b1})"
    print(f"{stages} stages x {micro} micro-batches x {steps} steps: "
          f"forward, backward, receive and send slices as expected")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("trace")
    parser.add_argument("ranks", type=int)
    parser.add_argument("--stages", type=int)
    parser.add_argument("--micro-batches", type=int)
    parser.add_argument("--steps", type=int)
    args = parser.parse_args()
    path, ranks = args.trace, args.ranks
    with open(path) as f:
        trace = json.load(f)  # raises on invalid JSON
    events = trace["traceEvents"]
    names = {(e["pid"], e["args"]["name"]) for e in events if e.get("name") == "process_name"}
    assert names == {(r, f"rank {r}") for r in range(ranks)}, names
    slices = [e for e in events if e.get("ph") == "X"]
    for e in slices:
        assert e["dur"] >= 0 and isinstance(e["ts"], int), e
    if args.stages:
        check_stages(events, slices, args.stages, args.micro_batches, args.steps)
        return
    overlapping = 0
    for r in range(ranks):
        mine = [e for e in slices if e["pid"] == r]
        phases = {e["name"] for e in mine if e["tid"] == 0}
        for needed in ("forward", "backward", "wait for gradients", "optimizer step",
                       "wait for data"):
            assert needed in phases, f"rank {r} has no '{needed}' slice: {sorted(phases)}"
        backward = [(e["ts"], e["ts"] + e["dur"]) for e in mine if e["name"] == "backward"]
        allreduce = [(e["ts"], e["ts"] + e["dur"]) for e in mine
                     if e["tid"] == 1 and e["name"].startswith("allreduce bucket")]
        if ranks > 1:
            assert allreduce, f"rank {r} has no allreduce slices"
            enq = [e for e in events if e.get("ph") == "i" and e["pid"] == r
                   and e["name"].startswith("enqueue bucket")]
            assert len(enq) == len(allreduce), (len(enq), len(allreduce))
        for a0, a1 in allreduce:
            if any(a0 < b1 and b0 < a1 for b0, b1 in backward):
                overlapping += 1
    print(f"{path}: {len(events)} events, {len(slices)} slices, "
          f"{overlapping} allreduce slices overlap backward")
    if ranks > 1:
        assert overlapping > 0, "no allreduce overlaps backward"


if __name__ == "__main__":
    main()
