#!/usr/bin/env python3
"""Which device each rank's model actually trained on: every rank prints one
line "PROBE rank=R device=D parameters_on=[...]" and fails unless D (and
every parameter's device) is --expect: a device (cuda:0) or a type (cuda,
cpu).

    tarantella -n 2 --ranks-per-gpu 2 -- bench/gpu/device_probe.py --expect cuda:0
        a fit of a small model of its own (from host data and from data on the
        device), model(x), get_weights() and the current CUDA device, then the
        line;
    tarantella -n 2 --ranks-per-gpu 2 -- bench/gpu/device_probe.py --expect cuda \\
        --run examples/python/lenet5.py --epochs 1 ...
        runs the script as __main__ with the arguments after it and prints the
        line after every tnt.Model.fit there; exits non-zero when a fit ran
        elsewhere, or when none ran (the script's own exit status otherwise).

--deterministic-kernels (before --run): cuDNN's deterministic algorithms and
no autotuning, so that two runs on the GPU that should agree bitwise can
(with CUBLAS_WORKSPACE_CONFIG=:4096:8 in the environment for cuBLAS); this
is not Tarantella's deterministic mode (exact sums on the host).
"""
import argparse
import os
import runpy
import sys


def matches(device: str, expect: str) -> bool:
    return device == expect or (":" not in expect and device.split(":")[0] == expect)


def probe(tnt, model, expect: str, where: str) -> bool:
    """Prints this rank's PROBE line; True when the model is on `expect`."""
    device = str(model._impl.device)
    params = sorted({str(t.device) for t in model.module.parameters()})
    ok = matches(device, expect) and all(matches(p, expect) for p in params)
    print(f"PROBE rank={tnt.get_rank()} device={device} parameters_on={params} after={where}"
          f"{'' if ok else ' WRONG, expected ' + expect}", flush=True)
    return ok


def own_fit(tnt, expect: str) -> int:
    """A fit of its own, and what the Python front end promises on the
    rank's device (the suite's pytest tests say the same, where pytest is)."""
    import torch

    model = tnt.Model(torch.nn.Linear(8, 2))
    model.compile(optimizer=torch.optim.SGD(model.parameters(), lr=0.1),
                  loss=torch.nn.CrossEntropyLoss())
    device = torch.device(str(model._impl.device))
    problems = []
    if device.type == "cuda" and torch.cuda.current_device() != device.index:
        problems.append(f"the current CUDA device is {torch.cuda.current_device()}, "
                        f"the model's {device}")
    x, y = torch.randn(32, 8), torch.randint(0, 2, (32,))
    model.fit(x, y, batch_size=8, epochs=1, verbose=0)
    # Data already on the model's device (pin_memory is on for a GPU).
    on = (x.to(device), y.to(device))
    model.fit(*on, batch_size=8, epochs=1, verbose=0, validation_data=on)
    if model.predict(on[0], batch_size=8, verbose=0).shape != (32, 2):
        problems.append("predict on the device's data gave the wrong shape")
    out = model(x)
    if out.device != device:
        problems.append(f"model(x) with host inputs gave its output on {out.device}")
    if any(w.device.type != "cpu" for w in model.get_weights()):
        problems.append("get_weights() returned tensors off the CPU")
    for p in problems:
        print(f"PROBE rank={tnt.get_rank()} PROBLEM {p}", flush=True)
    return 0 if probe(tnt, model, expect, "fit") and not problems else 1


def wrapped(tnt, expect: str, script: str, args: list) -> int:
    fits = {"count": 0, "wrong": 0}
    original = tnt.Model.fit
    name = os.path.basename(script)

    def fit(self, *a, **kw):
        logs = original(self, *a, **kw)
        fits["count"] += 1
        if not probe(tnt, self, expect, f"{name} fit #{fits['count']}"):
            fits["wrong"] += 1
        return logs

    tnt.Model.fit = fit
    sys.argv = [script] + args
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))  # as `python3 SCRIPT` does
    code = 0
    try:
        runpy.run_path(script, run_name="__main__")
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    if code:
        return code
    if fits["count"] == 0:
        print(f"PROBE rank={tnt.get_rank()} device=none: {name} ran no tnt.Model.fit", flush=True)
        return 1
    return 1 if fits["wrong"] else 0


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--expect", required=True,
                   help="the device (cuda:0) or device type (cuda, cpu) every rank must use")
    p.add_argument("--deterministic-kernels", action="store_true",
                   help="cuDNN deterministic algorithms, no benchmark mode")
    p.add_argument("--run", nargs=argparse.REMAINDER, metavar="SCRIPT ...",
                   help="run SCRIPT with the arguments after it, probing after each fit")
    a = p.parse_args()
    if a.run is not None and not a.run:
        p.error("--run needs a script")

    if a.deterministic_kernels:
        import torch

        torch.backends.cudnn.deterministic = True
        torch.backends.cudnn.benchmark = False
    import tarantella as tnt

    if a.run:
        return wrapped(tnt, a.expect, a.run[0], a.run[1:])
    return own_fit(tnt, a.expect)


if __name__ == "__main__":
    sys.exit(main())
