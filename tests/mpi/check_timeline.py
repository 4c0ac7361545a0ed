#!/usr/bin/env python3
"""Checks a timeline written with TNT_TIMELINE / --timeline: it is valid
Chrome-trace JSON (what chrome://tracing and ui.perfetto.dev load), has one
process per rank with compute and allreduce tracks, the step phases, and
allreduce slices that overlap backward slices of the same rank.

    check_timeline.py TRACE RANKS
"""
import json
import sys


def main():
    path, ranks = sys.argv[1], int(sys.argv[2])
    with open(path) as f:
        trace = json.load(f)  # raises on invalid JSON
    events = trace["traceEvents"]
    names = {(e["pid"], e["args"]["name"]) for e in events if e.get("name") == "process_name"}
    assert names == {(r, f"rank {r}") for r in range(ranks)}, names
    slices = [e for e in events if e.get("ph") == "X"]
    for e in slices:
        assert e["dur"] >= 0 and isinstance(e["ts"], int), e
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
