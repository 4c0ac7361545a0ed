#!/usr/bin/python3
"""Runs every variant of the training-step benchmark, interleaved, and prints
one markdown table (see run.sh, which starts this).

Variants, per model (LeNet-5 and the 784-4096-4096-10 MLP), global batch B:
  a     plain LibTorch loop, 1 thread                 (train_step_bench plain)
  b     tarantella, 1 rank, 1 thread                  (tarantella -n 1 ... tnt)
  c     tarantella, 2 ranks, 1 thread each            (tarantella -n 2 ... tnt)
  d1    PyTorch DDP (gloo), 1 process, 1 thread       (ddp_bench.py --nproc 1)
  d2    PyTorch DDP (gloo), 2 processes, 1 thread each
  e     plain LibTorch loop, 1 process, 2 threads
and four diagnostic rows that explain the ratios:
  a0    (a) with .grad reset to undefined each step instead of zero_grad():
        the fastest plain loop; (b)/(a0) is tarantella's overhead against it
  f     plain LibTorch loop, 1 thread, batch B/2: 2*f/a is the ceiling of any
        1 -> 2 rank data-parallel speed-up with one thread per rank (each rank
        computes half the batch and nothing else: no communication at all)
  cy    (c) with OpenMPI's mpi_yield_when_idle=1: how much of the 2-rank cost
        is MPI busy-polling on the communication thread (it shares a core
        with the training thread when ranks = cores)

A round runs each variant once, as a fresh process; the order of the
variants rotates from round to round so that no variant always follows the
same neighbour, and machine noise hits all of them alike. Each process
reports its steady-state samples/s (first epoch excluded); the table gives
the median over rounds, and every ratio is the median of the per-round
ratios (each taken within one round, minutes apart at most).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

VARIANTS = ["a", "b", "c", "d1", "d2", "e", "a0", "f", "cy", "f2"]
LABELS = {
    "a": "(a) plain LibTorch, 1 thread",
    "b": "(b) tarantella, 1 rank",
    "c": "(c) tarantella, 2 ranks",
    "d1": "(d) PyTorch DDP, 1 process",
    "d2": "(d) PyTorch DDP, 2 processes",
    "e": "(e) plain LibTorch, 2 threads",
    "a0": "(a) with .grad reset instead of zero_grad()",
    "f": "plain LibTorch, 1 thread, batch B/2 (ceiling)",
    "cy": "(c) with OMPI_MCA_mpi_yield_when_idle=1",
    "f2": "2 plain LibTorch processes at once, batch B/2 each (ceiling, samples/s summed)",
}


def command(variant, model, steps, epochs, args):
    batch = args.batch_size // 2 if variant == "f" else args.batch_size
    bench = [args.bench, "--model", model, "--batch-size", str(batch),
             "--steps", str(steps), "--epochs", str(epochs)]
    launch = [args.launcher, "--no-gpu", "-n"]
    ddp = [args.python, args.ddp, "--model", model, "--batch-size", str(args.batch_size),
           "--steps", str(steps), "--epochs", str(epochs), "--nproc"]
    threads = "2" if variant == "e" else "1"
    cmd = {
        "a": bench + ["--variant", "plain", "--threads", "1"],
        "b": launch + ["1", "--"] + bench + ["--variant", "tnt"],
        "c": launch + ["2", "--"] + bench + ["--variant", "tnt"],
        "d1": ddp + ["1"],
        "d2": ddp + ["2"],
        "e": bench + ["--variant", "plain", "--threads", "2"],
        "a0": bench + ["--variant", "plain", "--threads", "1", "--grads-to-none"],
        "f": bench + ["--variant", "plain", "--threads", "1"],
        "cy": launch + ["2", "-x", "OMPI_MCA_mpi_yield_when_idle=1", "--"] + bench
              + ["--variant", "tnt"],
    }[variant]
    env = dict(os.environ, OMP_NUM_THREADS=threads, TNT_NUM_THREADS=threads)
    return cmd, env


def run_once(variant, model, steps, epochs, args):
    # f2: two copies of f side by side, what 2 ranks could do with no
    # communication at all on the same cores (they share memory bandwidth
    # and caches, which f alone does not).
    cmd, env = command("f" if variant == "f2" else variant, model, steps, epochs, args)
    load = os.getloadavg()[0]
    copies = 2 if variant == "f2" else 1
    procs = [subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for _ in range(copies)]
    outs = []
    for proc in procs:
        stdout, stderr = proc.communicate(timeout=600)
        results = [line[len("RESULT "):] for line in stdout.splitlines()
                   if line.startswith("RESULT ")]
        if proc.returncode != 0 or len(results) != 1:
            sys.exit(f"variant {variant} ({model}) failed with exit status {proc.returncode}:\n"
                     f"$ {' '.join(cmd)}\n{stdout}\n{stderr}")
        outs.append(json.loads(results[0]))
    result = outs[0]
    result["samples_per_s"] = sum(o["samples_per_s"] for o in outs)
    result["load"] = load
    return result


def check_consistency(results):
    """Same data everywhere, one thread per rank where asked, OpenBLAS."""
    problems = []
    for model, per_variant in results.items():
        # f and f2 train on half as many samples (batch B/2): their own data.
        sums = {v: tuple(r["checksum"]) for v, rs in per_variant.items() for r in rs
                if v not in ("f", "f2")}
        first = next(iter(sums.values()))
        if any(abs(s[0] - first[0]) > 1e-3 * max(1.0, abs(first[0])) or s[1] != first[1]
               for s in sums.values()):
            problems.append(f"{model}: the variants saw different data: {sums}")
        for v, rs in per_variant.items():
            want = 2 if v == "e" else 1
            if any(r["threads"] != want for r in rs):
                problems.append(f"{model} {v}: {[r['threads'] for r in rs]} threads, want {want}")
            if any("openblas" not in r["blas"] for r in rs):
                problems.append(f"{model} {v}: BLAS is {rs[0]['blas']}, not OpenBLAS")
    return problems


def paired_median(rs_num, rs_den):
    return statistics.median(n["samples_per_s"] / d["samples_per_s"]
                             for n, d in zip(rs_num, rs_den))


def table(results, args):
    rows = []
    rows.append("| model | variant | samples/s (median) | min – max | rounds |")
    rows.append("|---|---|---:|---:|---:|")
    for model, per_variant in results.items():
        for v in VARIANTS:
            sps = [r["samples_per_s"] for r in per_variant[v]]
            rows.append(f"| {model} | {LABELS[v]} | {statistics.median(sps):.1f} | "
                        f"{min(sps):.1f} – {max(sps):.1f} | {len(sps)} |")
    rows.append("")
    rows.append("| model | overhead (b)/(a) | tarantella 1→2 (c)/(b) | (c)/(a) | "
                "DDP 1→2 (d2)/(d1) | threads 1→2 (e)/(a) | (c)/(d2) | "
                "(b)/(a0) | ceiling 2·f/a | with yield (cy)/(b) | ceiling f2/a | (c)/(f2) |")
    rows.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    verdicts = []
    for model, r in results.items():
        overhead = paired_median(r["b"], r["a"])
        tnt_up = paired_median(r["c"], r["b"])
        vs_plain = paired_median(r["c"], r["a"])
        ddp_up = paired_median(r["d2"], r["d1"])
        thr_up = paired_median(r["e"], r["a"])
        vs_ddp = paired_median(r["c"], r["d2"])
        vs_best = paired_median(r["b"], r["a0"])
        ceiling = 2 * paired_median(r["f"], r["a"])
        yield_up = paired_median(r["cy"], r["b"])
        ceiling2 = paired_median(r["f2"], r["a"])
        of_ceiling2 = paired_median(r["c"], r["f2"])
        rows.append(f"| {model} | {overhead:.3f} | {tnt_up:.2f}x | {vs_plain:.2f}x | "
                    f"{ddp_up:.2f}x | {thr_up:.2f}x | {vs_ddp:.2f}x | {vs_best:.3f} | {ceiling:.2f}x | "
                    f"{yield_up:.2f}x | {ceiling2:.2f}x | {of_ceiling2:.3f} |")
        verdicts.append(f"{model}: overhead (b)/(a) {overhead:.3f} >= 0.97: "
                        f"{'MET' if overhead >= 0.97 else 'NOT MET'}; "
                        f"1->2 speed-up {tnt_up:.3f}x >= 1.6x: "
                        f"{'MET' if tnt_up >= 1.6 else 'NOT MET'}; "
                        f"above DDP's {ddp_up:.3f}x: {'MET' if tnt_up > ddp_up else 'NOT MET'}")
        verdicts.append(f"{model} (>= 0.9 of ceiling target): (c)/(b) {tnt_up:.3f}x = {tnt_up / ceiling:.3f} of "
                        f"the ceiling 2·f/a; (c) = {of_ceiling2:.3f} of two plain processes at "
                        f"once (f2); >= 0.9: "
                        f"{'MET' if tnt_up / ceiling >= 0.9 else 'NOT MET'} / "
                        f"{'MET' if of_ceiling2 >= 0.9 else 'NOT MET'}")
    return "\n".join(rows + [""] + verdicts)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--bench", required=True, help="the bench_train_step binary")
    p.add_argument("--launcher", required=True, help="the tarantella launcher")
    p.add_argument("--ddp", required=True, help="ddp_bench.py")
    p.add_argument("--python", default="/usr/bin/python3", help="python with Debian's torch")
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--batch-size", type=int, default=256)
    p.add_argument("--models", default="lenet,mlp")
    p.add_argument("--lenet-steps", type=int, default=20, help="global batches per epoch")
    p.add_argument("--mlp-steps", type=int, default=4, help="global batches per epoch")
    p.add_argument("--epochs", type=int, default=3, help="epochs per run, the first not counted")
    p.add_argument("--json", help="also write every raw result here")
    args = p.parse_args()

    models = args.models.split(",")
    steps = {"lenet": args.lenet_steps, "mlp": args.mlp_steps}
    results = {m: {v: [] for v in VARIANTS} for m in models}
    start = time.time()
    print(f"global batch {args.batch_size}; {args.rounds} rounds; per run {args.epochs} epochs "
          f"(first excluded) of {', '.join(f'{m} {steps[m]}' for m in models)} steps; "
          f"load average at start {os.getloadavg()[0]:.2f}", flush=True)
    for k in range(args.rounds):
        order = VARIANTS[k % len(VARIANTS):] + VARIANTS[:k % len(VARIANTS)]
        for model in models:
            for v in order:
                r = run_once(v, model, steps[model], args.epochs, args)
                results[model][v].append(r)
                print(f"round {k + 1} {model:5s} {v:2s} {r['samples_per_s']:9.1f} samples/s "
                      f"(load {r['load']:.2f})", file=sys.stderr, flush=True)
    print(f"wall time {time.time() - start:.0f} s; load average at end "
          f"{os.getloadavg()[0]:.2f}\n")
    print(table(results, args))
    problems = check_consistency(results)
    print("\nchecks: " + ("same data in every variant, threads as asked, OpenBLAS everywhere ("
                          + next(iter(next(iter(results.values())).values()))[0]["blas"] + ")"
                          if not problems else "; ".join(problems)))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
