#!/usr/bin/python3
"""Runs the scaling benchmark (see run.sh, which starts this) and prints its
markdown tables.

For each link rate, a fresh 2-host cluster (bench/cluster/cluster.sh) and a
probe of what its link carries; then, per round and model, every variant as
a fresh job on the two hosts, in an order rotating from round to round:

  compute   no gradient exchange: the plain LibTorch loop at the micro-batch
            (B/2) on each host at the same time; the slower host's median
            step is the floor of a synchronous data-parallel step
  tnt       tarantella --hostfile, defaults
  fusion0   --fusion-threshold 0 (one allreduce per tensor)
  nooverlap TNT_OVERLAP=false (allreduce only after backward)
  autotune  --autotune: fusion threshold and overlap on/off (its trials
            are dropped: the first AUTOTUNE_STEPS steps are not timed, and
            the tuner's own count of them is checked against that)
  fp16      CompileOptions().compression(Float16): gradients travel as
            float16 (half the bytes; not the same math, so not a default)
  ddp       PyTorch DistributedDataParallel (gloo), one process per host

Every job runs W warm-up steps and M timed steps; a job's step time is the
median of its timed steps, and the table gives the median over rounds.
Ratios are to compute-only, taken within a round, then the median.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time

VARIANTS = ["compute", "tnt", "fusion0", "nooverlap", "autotune", "fp16", "ddp"]
LABELS = {
    "compute": "compute only (no exchange)",
    "tnt": "tarantella, defaults",
    "fusion0": "tarantella, fusion off",
    "nooverlap": "tarantella, overlap off",
    "autotune": "tarantella, auto-tuned",
    "fp16": "tarantella, float16 compression",
    "ddp": "PyTorch DDP (gloo)",
}
BATCH = {"mlp": 256, "resnet18": 64}  # global; B/2 per host
# fit()'s auto-tuner: overlap on/off at 32 KiB, then 7 thresholds; each
# trial 1 warm-up + 4 measured steps.
AUTOTUNE_STEPS = (2 + 7) * 5
PUBLISHED = {96: "57x (ResNet-50, 96 GPUs)", 256: "62x (256 CPU processes)"}


class Bench:
    def __init__(self, args):
        self.a = args
        self.cluster = [args.cluster]
        self.port = 29500

    def sh(self, cmd, timeout=600, env=None):
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
        return proc

    def result(self, proc, what):
        lines = [l[len("RESULT "):] for l in proc.stdout.splitlines() if l.startswith("RESULT ")]
        if proc.returncode != 0 or len(lines) != 1:
            sys.exit(f"{what} failed with exit status {proc.returncode}:\n"
                     f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
        return json.loads(lines[0])

    def on_hosts(self, commands):
        """Starts one command per host at once; returns their results."""
        procs = [subprocess.Popen(self.cluster + ["exec", str(h)] + cmd, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True)
                 for h, cmd in enumerate(commands)]
        outs = []
        for p in procs:
            out, err = p.communicate(timeout=600)
            outs.append(subprocess.CompletedProcess(p.args, p.returncode, out, err))
        return outs

    def next_port(self):
        self.port += 1
        return self.port

    def probe_link(self):
        port = self.next_port()
        mbytes = 100 if self.rate_gbit <= 1 else 400
        server, client = self.on_hosts([
            [self.a.python, self.a.probe, "serve", str(port)],
            [self.a.python, self.a.probe, "measure", self.addresses[0], str(port), str(mbytes)]])
        # Host 1 measures towards host 0's server (the order of on_hosts).
        return self.result(client, "link probe")

    def steps_for(self, variant):
        extra = AUTOTUNE_STEPS if variant == "autotune" else 0
        return extra + self.a.warmup, self.a.steps

    def run(self, variant, model):
        skip, timed = self.steps_for(variant)
        total = skip + timed
        batch = BATCH[model]
        common = ["--model", model, "--steps", str(total)]
        if variant == "compute":
            cmd = [self.a.bench, "--variant", "plain", "--batch-size", str(batch // 2),
                   "--threads", "1"] + common
            results = [self.result(p, f"compute-only {model}") for p in self.on_hosts([cmd, cmd])]
            per_host = [statistics.median(r["step_ms"][skip:]) for r in results]
            return {"step_ms": max(per_host), "hosts": [r["host"] for r in results],
                    "per_host": per_host}
        if variant == "ddp":
            port = str(self.next_port())
            cmds = [[self.a.python, self.a.ddp, "--rank", str(h), "--world-size", "2",
                     "--master-addr", self.addresses[0], "--master-port", port,
                     "--batch-size", str(batch)] + common for h in range(2)]
            r = self.result(self.on_hosts(cmds)[0], f"DDP {model}")
            return {"step_ms": statistics.median(r["step_ms"][skip:]), "host": r["host"]}
        flags = {"tnt": [], "fusion0": ["--fusion-threshold", "0"],
                 "nooverlap": ["-x", "TNT_OVERLAP=false"],
                 "autotune": ["--autotune", "--log-level", "INFO"], "fp16": []}[variant]
        program = ["--compression", "float16"] if variant == "fp16" else []
        cmd = ([self.a.launcher] + self.flags + ["--no-gpu"] + flags + ["--", self.a.bench,
               "--variant", "tnt", "--batch-size", str(batch)] + common + program)
        proc = self.sh(cmd)
        r = self.result(proc, f"{variant} {model}: $ {' '.join(cmd)}")
        if r["ranks"] != 2:
            sys.exit(f"{variant} {model} ran on {r['ranks']} rank(s), not 2")
        out = {"step_ms": statistics.median(r["step_ms"][skip:])}
        if variant == "autotune":
            chosen = [l for l in proc.stderr.splitlines() if "autotune: " in l and " chosen " in l]
            steps = re.search(r"after \d+ trials, (\d+) steps", chosen[-1]) if chosen else None
            if not steps or int(steps.group(1)) != AUTOTUNE_STEPS:
                sys.exit(f"autotune {model}: expected the tuner to finish after {AUTOTUNE_STEPS} "
                         f"steps, its log says: {chosen}\n{proc.stderr[-3000:]}")
            out["choice"] = re.sub(r".*autotune: ", "", chosen[-1])
        return out

    def rate_run(self, rate):
        self.rate_gbit = int(rate.replace("gbit", ""))
        subprocess.run(self.cluster + ["up", "--hosts", "2", "--rate", rate], check=True)
        self.flags = subprocess.run(self.cluster + ["flags"], check=True, capture_output=True,
                                    text=True).stdout.split()
        with open(self.flags[self.flags.index("--hostfile") + 1]) as hostfile:
            self.addresses = [l.split()[0] for l in hostfile if l.strip() and l[0] != "#"]
        link = self.probe_link()
        print(f"# {rate}: one TCP stream carries {link['gbit_per_s']:.2f} Gbit/s, "
              f"round trip {link['rtt_us']:.0f} us", flush=True)
        results = {m: {v: [] for v in VARIANTS} for m in self.a.models}
        for k in range(self.a.rounds):
            order = VARIANTS[k % len(VARIANTS):] + VARIANTS[:k % len(VARIANTS)]
            for model in self.a.models:
                for v in order:
                    start = time.time()
                    r = self.run(v, model)
                    results[model][v].append(r)
                    print(f"{rate} round {k + 1} {model:8s} {v:9s} {r['step_ms']:8.1f} ms/step "
                          f"({time.time() - start:.0f} s) {r.get('choice', '')}",
                          file=sys.stderr, flush=True)
        return {"link": link, "results": results}


def median(xs):
    return statistics.median(xs)


def step_table(runs, models):
    rows = ["| link | model | variant | step time ms (median) | min – max | ratio to compute-only |",
            "|---|---|---|---:|---:|---:|"]
    for rate, run in runs.items():
        for model in models:
            r = run["results"][model]
            for v in VARIANTS:
                ms = [x["step_ms"] for x in r[v]]
                ratio = median([x["step_ms"] / c["step_ms"] for x, c in zip(r[v], r["compute"])])
                rows.append(f"| {rate} | {model} | {LABELS[v]} | {median(ms):.1f} | "
                            f"{min(ms):.1f} – {max(ms):.1f} | {ratio:.2f}x |")
    return "\n".join(rows)


FIXED = ["tnt", "fusion0", "nooverlap"]  # the uncompressed fixed settings


def tuned_table(runs, models):
    """The auto-tuned step against the best fixed uncompressed variant of the
    same round (the one fastest in that round), then the median over rounds,
    and what the tuner chose in each round."""
    rows = ["| link | model | auto-tuned / best fixed (median over rounds) | per round "
            "| choice per round |", "|---|---|---:|---|---|"]
    if "autotune" not in VARIANTS:
        return ""
    for rate, run in runs.items():
        for model in models:
            r = run["results"][model]
            per_round = []
            for k, tuned in enumerate(r["autotune"]):
                best = min([v for v in FIXED if v in VARIANTS],
                           key=lambda v: r[v][k]["step_ms"])
                per_round.append((tuned["step_ms"] / r[best][k]["step_ms"], best))
            choices = []
            for x in r["autotune"]:
                c = x.get("choice", "?")
                choices.append((c[0] if c else "?") if isinstance(c, list) else c)
            rows.append(f"| {rate} | {model} | {median([q for q, _ in per_round]):.3f} | "
                        + ", ".join(f"{q:.3f} (vs {LABELS[b].split(', ')[1]})"
                                    for q, b in per_round)
                        + " | " + "; ".join(re.sub(r" chosen .*", "", c) for c in choices) + " |")
    return "\n".join(rows)


def model_inputs(run, model, params):
    """Compute time, gradient bytes, measured exchange time and overlap."""
    r = run["results"][model]
    t_c = median([x["step_ms"] for x in r["compute"]]) / 1e3
    t_def = median([x["step_ms"] for x in r["tnt"]]) / 1e3
    t_off = median([x["step_ms"] for x in r["nooverlap"]]) / 1e3
    grad = 4 * params[model]
    exchange = max(t_off - t_c, 1e-6)  # N = 2: the ring sends G once each way
    overlap = min(max((t_off - t_def) / exchange, 0.0), 1.0)
    return {"t_c": t_c, "t_def": t_def, "t_off": t_off, "grad": grad, "exchange": exchange,
            "overlap": overlap, "eff_gbit": grad * 8 / exchange / 1e9,
            "rtt": run["link"]["rtt_us"] * 1e-6}


def predict(inp, n, gbit):
    """Step time on n nodes: compute + the part of the ring allreduce that is
    not hidden. Ring volume 2(n-1)/n * G at `gbit`, 2(n-1) latency steps of
    half a round trip; the time hidden behind backward is the measured
    overlap fraction of the 2-node exchange (the backward pass does not get
    longer with n, so neither does the hiding room)."""
    if n == 1:
        return inp["t_c"]
    ring = 2 * (n - 1) / n * inp["grad"] * 8 / (gbit * 1e9) + 2 * (n - 1) * inp["rtt"] / 2
    hidden = inp["overlap"] * min(inp["exchange"], ring)
    return inp["t_c"] + max(ring - hidden, 0.0)


def scaling_tables(runs, models, params):
    out = ["| link | model | compute s/step | gradient MB | exchange at N=2 s (overlap off − compute) "
           "| effective Gbit/s | overlap fraction | probe Gbit/s | round trip us |",
           "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    inputs = {}
    for rate, run in runs.items():
        for model in models:
            i = model_inputs(run, model, params)
            inputs[(rate, model)] = i
            out.append(f"| {rate} | {model} | {i['t_c']:.3f} | {i['grad'] / 1e6:.1f} | "
                       f"{i['exchange']:.3f} | {i['eff_gbit']:.2f} | {i['overlap']:.2f} | "
                       f"{run['link']['gbit_per_s']:.2f} | {run['link']['rtt_us']:.0f} |")
    out.append("")
    rate = "10gbit" if "10gbit" in runs else next(iter(runs))
    cols = []
    for model in models:
        i = inputs[(rate, model)]
        cols.append((f"{model}, as measured ({i['eff_gbit']:.1f} Gbit/s effective)", i,
                     i["eff_gbit"]))
        cols.append((f"{model}, at 10 Gbit/s line rate", i, 10.0))
        cols.append((f"{model}, at 25 Gbit/s line rate", i, 25.0))
    out.append("| nodes | " + " | ".join(c[0] for c in cols) + " | Tarantella manual |")
    out.append("|---:|" + "---:|" * len(cols) + "---|")
    for n in [1, 2, 4, 8, 16, 32, 64, 96, 128, 256]:
        cells = []
        for _, i, gbit in cols:
            t = predict(i, n, gbit)
            cells.append(f"{n * i['t_c'] / t:.1f}x")
        out.append(f"| {n} | " + " | ".join(cells) + f" | {PUBLISHED.get(n, '')} |")
    return "\n".join(out)


def plot_svg(runs, models, params, path):
    """Predicted speed-up vs. nodes (log-log), the model's columns as lines,
    ideal scaling dashed, the Tarantella manual's published points as dots."""
    rate = "10gbit" if "10gbit" in runs else next(iter(runs))
    nodes = [1, 2, 4, 8, 16, 32, 64, 96, 128, 256]
    colors = {"mlp": "#1f77b4", "resnet18": "#d62728"}
    dashes = {"measured": "", 10.0: "7,3", 25.0: "2,2"}
    W, H, L, R, T, B = 780, 480, 70, 300, 30, 60
    import math
    def x(n):
        return L + (W - L - R) * math.log2(n) / 8
    def y(s):
        return H - B - (H - T - B) * math.log2(max(s, 1)) / 8
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
           f'font-family="sans-serif" font-size="12">',
           f'<rect width="{W}" height="{H}" fill="white"/>',
           f'<text x="{L}" y="18" font-size="14">Predicted speed-up vs. nodes '
           f'(model of docs/scaling.md, inputs measured at {rate})</text>']
    for k in range(9):
        v = 2 ** k
        out.append(f'<line x1="{x(v):.1f}" y1="{T}" x2="{x(v):.1f}" y2="{H - B}" stroke="#eee"/>')
        out.append(f'<line x1="{L}" y1="{y(v):.1f}" x2="{W - R}" y2="{y(v):.1f}" stroke="#eee"/>')
        out.append(f'<text x="{x(v):.1f}" y="{H - B + 16}" text-anchor="middle">{v}</text>')
        out.append(f'<text x="{L - 6}" y="{y(v) + 4:.1f}" text-anchor="end">{v}x</text>')
    out.append(f'<text x="{(L + W - R) / 2}" y="{H - 18}" text-anchor="middle">nodes</text>')
    out.append(f'<line x1="{x(1)}" y1="{y(1)}" x2="{x(256)}" y2="{y(256)}" stroke="#bbb"/>')
    legend = [("ideal (N x)", "#bbb", "")]
    for model in models:
        inp = model_inputs(runs[rate], model, params)
        for bw in ("measured", 10.0, 25.0):
            gbit = inp["eff_gbit"] if bw == "measured" else bw
            pts = " ".join(f"{x(n):.1f},{y(n * inp['t_c'] / predict(inp, n, gbit)):.1f}"
                           for n in nodes)
            out.append(f'<polyline points="{pts}" fill="none" stroke="{colors.get(model, "#000")}" '
                       f'stroke-width="2" stroke-dasharray="{dashes[bw]}"/>')
            label = (f"{model}, as measured ({gbit:.1f} Gbit/s)" if bw == "measured"
                     else f"{model}, {bw:.0f} Gbit/s line rate")
            legend.append((label, colors.get(model, "#000"), dashes[bw]))
    for k, (n, text) in enumerate(PUBLISHED.items()):
        s_pub = float(text.split("x")[0])
        out.append(f'<circle cx="{x(n):.1f}" cy="{y(s_pub):.1f}" r="5" fill="#2ca02c"/>')
        dy = -12 if k == 0 else 22  # first label above its dot, the next below
        out.append(f'<text x="{x(n) - 8:.1f}" y="{y(s_pub) + dy:.1f}" text-anchor="end" '
                   f'fill="#2ca02c">Tarantella manual: {text}</text>')
    for i, (label, color, dash) in enumerate(legend):
        ly = T + 20 + 18 * i
        out.append(f'<line x1="{W - R + 12}" y1="{ly}" x2="{W - R + 40}" y2="{ly}" stroke="{color}" '
                   f'stroke-width="2" stroke-dasharray="{dash}"/>')
        out.append(f'<text x="{W - R + 46}" y="{ly + 4}">{label}</text>')
    out.append("</svg>")
    with open(path + ".tmp", "w") as f:
        f.write("\n".join(out) + "\n")
    os.replace(path + ".tmp", path)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    for name in ["cluster", "launcher", "bench", "ddp", "probe"]:
        p.add_argument(f"--{name}")
    p.add_argument("--python", default="/usr/bin/python3")
    p.add_argument("--rates", default="1gbit,10gbit")
    p.add_argument("--models", default="mlp,resnet18")
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--variants", default=",".join(VARIANTS),
                   help="a subset of " + ",".join(VARIANTS) + " (compute, tnt and nooverlap "
                   "are always run: the model of the scaling table needs them)")
    p.add_argument("--warmup", type=int, default=2, help="untimed steps per job")
    p.add_argument("--steps", type=int, default=5, help="timed steps per job")
    p.add_argument("--json", help="also write every raw result here")
    p.add_argument("--plot", help="also draw the predicted speed-up as an SVG here")
    p.add_argument("--from-json", help="measure nothing: print the tables (and --plot) of a "
                   "previous run's --json file")
    p.add_argument("--mlp-batch", type=int, default=BATCH["mlp"],
                   help="the MLP's global batch (a larger one computes longer per exchange)")
    args = p.parse_args()
    BATCH["mlp"] = args.mlp_batch
    args.models = args.models.split(",")
    wanted = set(args.variants.split(",")) | {"compute", "tnt", "nooverlap"}
    unknown = wanted - set(VARIANTS)
    if unknown:
        p.error(f"--variants: unknown {','.join(sorted(unknown))}; known: {','.join(VARIANTS)}")
    VARIANTS[:] = [v for v in VARIANTS if v in wanted]
    params = {"mlp": 20037642, "resnet18": 11181642}
    if args.from_json:
        with open(args.from_json) as f:
            runs = json.load(f)
        # A run made with --variants holds only those.
        VARIANTS[:] = [v for v in VARIANTS if all(run["results"][m].get(v)
                                                  for run in runs.values() for m in args.models)]
        print(step_table(runs, args.models) + "\n\n" + tuned_table(runs, args.models) + "\n\n"
              + scaling_tables(runs, args.models, params))
        if args.plot:
            plot_svg(runs, args.models, params, args.plot)
        return
    missing = [n for n in ["cluster", "launcher", "bench", "ddp", "probe"] if not getattr(args, n)]
    if missing:
        p.error("needs --" + ", --".join(missing) + " (run.sh passes them)")
    bench = Bench(args)
    start = time.time()
    print(f"global batch: mlp {BATCH['mlp']}, resnet18 {BATCH['resnet18']} (half per host); "
          f"{args.rounds} rounds; "
          f"{args.warmup} warm-up + {args.steps} timed steps per job "
          f"(+{AUTOTUNE_STEPS} tuning steps for auto-tuned); load average at start "
          f"{os.getloadavg()[0]:.2f}", flush=True)
    runs = {}
    try:
        for rate in args.rates.split(","):
            runs[rate] = bench.rate_run(rate)
    finally:
        subprocess.run(bench.cluster + ["down"], check=False)
    print(f"wall time {time.time() - start:.0f} s; load average at end {os.getloadavg()[0]:.2f}\n")
    print(step_table(runs, args.models))
    print()
    print(tuned_table(runs, args.models))
    print()
    print(scaling_tables(runs, args.models, params))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(runs, f, indent=1)
    if args.plot:
        plot_svg(runs, args.models, params, args.plot)


if __name__ == "__main__":
    main()
