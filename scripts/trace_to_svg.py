#!/usr/bin/env python3
"""Renders a window of a Tarantella timeline (TNT_TIMELINE / --timeline) as
an SVG picture: one row per rank and track, slices coloured by phase, the
allreduce slices under the compute slices they overlap.

    scripts/trace_to_svg.py TRACE OUT.svg [--steps 3] [--skip 5]

Shows `--steps` consecutive training steps of rank 0 after skipping the
first `--skip` (warm-up), and the same time window for every rank.
Standard library only.
"""
import argparse
import html
import json

COLOURS = {
    "wait for data": "#bbbbbb",
    "forward": "#4e79a7",
    "backward": "#f28e2b",
    "wait for gradients": "#e15759",
    "optimizer step": "#59a14f",
    "allreduce": "#9c6ade",
}


def colour(name):
    return COLOURS["allreduce"] if name.startswith("allreduce") else COLOURS.get(name, "#777777")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("trace")
    p.add_argument("out")
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--skip", type=int, default=5)
    a = p.parse_args()
    with open(a.trace) as f:
        events = json.load(f)["traceEvents"]
    slices = [e for e in events if e.get("ph") == "X"]
    ranks = sorted({e["pid"] for e in slices})
    forwards = sorted(e["ts"] for e in slices if e["pid"] == ranks[0] and e["name"] == "forward")
    if len(forwards) < a.skip + a.steps + 1:
        raise SystemExit(f"{a.trace}: only {len(forwards)} steps; lower --skip/--steps")
    t0, t1 = forwards[a.skip], forwards[a.skip + a.steps]
    width, left, row_h, gap = 1000, 150, 22, 6
    rows = [(r, tid) for r in ranks for tid in (0, 1)]
    height = 40 + len(rows) * (row_h + gap) + 60
    scale = (width - left - 20) / (t1 - t0)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'font-family="sans-serif" font-size="12">',
           f'<rect width="{width}" height="{height}" fill="white"/>',
           f'<text x="{left}" y="20">Tarantella timeline: {a.steps} steps, '
           f'{(t1 - t0) / 1000:.1f} ms ({html.escape(a.trace.split("/")[-1])})</text>']
    for i, (r, tid) in enumerate(rows):
        y = 35 + i * (row_h + gap)
        label = f"rank {r} " + ("compute" if tid == 0 else "allreduce")
        out.append(f'<text x="10" y="{y + 15}">{label}</text>')
        out.append(f'<line x1="{left}" y1="{y + row_h}" x2="{width - 20}" y2="{y + row_h}" '
                   f'stroke="#dddddd"/>')
        for e in slices:
            if e["pid"] != r or e["tid"] != tid:
                continue
            s, d = e["ts"], e["dur"]
            if s + d < t0 or s > t1:
                continue
            x0 = left + max(s - t0, 0) * scale
            x1 = left + min(s + d - t0, t1 - t0) * scale
            out.append(f'<rect x="{x0:.1f}" y="{y}" width="{max(x1 - x0, 0.8):.1f}" '
                       f'height="{row_h}" fill="{colour(e["name"])}" stroke="white" '
                       f'stroke-width="0.3"><title>{html.escape(e["name"])}: '
                       f'{d / 1000:.2f} ms</title></rect>')
    y = 35 + len(rows) * (row_h + gap) + 15
    x = left
    for name, c in COLOURS.items():
        out.append(f'<rect x="{x}" y="{y}" width="12" height="12" fill="{c}"/>')
        out.append(f'<text x="{x + 16}" y="{y + 11}">{name}</text>')
        x += 30 + 7 * len(name)
    out.append("</svg>")
    with open(a.out, "w") as f:
        f.write("\n".join(out) + "\n")
    print(f"wrote {a.out}: ranks {ranks}, window {(t1 - t0) / 1000:.1f} ms")


if __name__ == "__main__":
    main()
