#!/usr/bin/env python3
"""Where a pipeline step's time goes, from a --timeline trace of bench_stages
(docs/perf-log/2026-11-stages-2.md): for the last STEPS steps, each stage's
forward, backward (to the input's gradient) and weights (the weights'
gradients, after the input's went back; stages after the first) per
micro-batch, and its share of the pipeline's span (the earliest "forward 0"
to the latest end of "backward M-1" or "weights M-1") spent computing,
waiting for activations, for gradients, for its sends, and untraced (the
step's other work: the optimizer step, the loss broadcast, the data);
then how long a neighbour's output took to arrive where the stage was
already waiting (its slice's end to the receive's end: transfer and
wake-up latency).

    bench/stages/trace_breakdown.py TRACE P M STEPS
"""
import collections
import json
import statistics
import sys
t = json.load(open(sys.argv[1]))["traceEvents"]
P = int(sys.argv[2]); M = int(sys.argv[3]); S = int(sys.argv[4])
X = [e for e in t if e.get("ph") == "X" and e["pid"] < P]
by = [collections.defaultdict(list) for _ in range(P)]
for e in X:
    by[e["pid"]][(e["tid"], e["name"])].append((e["ts"], e["ts"] + e["dur"]))
n = len(by[0][(0, "forward 0")])
tot = collections.defaultdict(float)
for k in range(n - S, n):
    b = min(by[s][(0, "forward 0")][k][0] for s in range(P))
    e = max(by[s][(0, f"{kind} {M-1}")][k][1] for s in range(P)
            for kind in ("backward", "weights") if (0, f"{kind} {M-1}") in by[s])
    tot["span"] += e - b
    for s in range(P):
        for (tid, name), v in by[s].items():
            if tid != 0: continue
            kind = name.split(" ")[0]
            if kind in ("forward", "backward", "weights"):
                tot[(s, kind)] += v[k][1] - v[k][0]
            elif kind == "receive":
                tot[(s, name.split(" ")[1])] += v[k][1] - v[k][0]
            elif name == "wait for sends":
                tot[(s, "wait sends")] += v[k][1] - v[k][0]
span = tot["span"]
print(f"mean span per step {span/S/1000:.1f} ms")
for s in range(P):
    f, bw, w = tot[(s, "forward")], tot[(s, "backward")], tot[(s, "weights")]
    ra, rg, ws = tot[(s, "activations")], tot[(s, "gradients")], tot[(s, "wait sends")]
    busy = f + bw + w
    print(f"stage {s}: forward {f/S/M/1000:.2f} ms/micro, backward {bw/S/M/1000:.2f} ms/micro, "
          f"weights {w/S/M/1000:.2f} ms/micro, "
          f"busy {busy/span:.3f} of span; receive act {ra/span:.3f}, receive grad {rg/span:.3f}, "
          f"wait sends {ws/span:.3f}, untraced {1-(busy+ra+rg+ws)/span:.3f}")
# latency: producer's slice end -> consumer's receive end (only where the consumer was waiting)
lat = collections.defaultdict(list)
for k in range(n - S, n):
    for i in range(M):
        for s in range(P - 1):
            f_end = by[s][(0, f"forward {i}")][k][1]
            r = by[s + 1][(0, f"receive activations {i} (from stage {s})")][k]
            if r[0] < f_end: lat["act"].append(r[1] - f_end)
            b_end = by[s + 1][(0, f"backward {i}")][k][1]
            r = by[s][(0, f"receive gradients {i} (from stage {s+1})")][k]
            if r[0] < b_end: lat["grad"].append(r[1] - b_end)
for key, v in lat.items():
    v.sort()
    print(f"{key}: {len(v)} waited transfers, latency median {statistics.median(v):.0f} us, "
          f"p90 {v[int(0.9*len(v))]:.0f} us, max {v[-1]:.0f} us")
