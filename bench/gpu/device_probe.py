#!/usr/bin/env python3
"""Which device each rank's model actually lives on, and that a step runs
there: every rank prints one line "PROBE rank=R device=D" and fails unless D
is --expect (e.g. cuda:0 for ranks sharing GPU 0 with --ranks-per-gpu).

    tarantella -n 2 --ranks-per-gpu 2 -- bench/gpu/device_probe.py --expect cuda:0
"""
import argparse

import torch

import tarantella as tnt


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--expect", required=True, help="the device every rank must use")
    a = p.parse_args()
    model = tnt.Model(torch.nn.Linear(8, 2))
    model.compile(optimizer=torch.optim.SGD(model.parameters(), lr=0.1),
                  loss=torch.nn.CrossEntropyLoss())
    x, y = torch.randn(32, 8), torch.randint(0, 2, (32,))
    model.fit(x, y, batch_size=8, epochs=1, verbose=0)
    device = str(model._impl.device)
    params = {str(t.device) for t in model.module.parameters()}
    print(f"PROBE rank={tnt.get_rank()} device={device} parameters_on={sorted(params)}",
          flush=True)
    if device != a.expect or params != {a.expect}:
        raise SystemExit(f"rank {tnt.get_rank()}: the model is on {device} (parameters on "
                         f"{sorted(params)}), expected {a.expect}")


if __name__ == "__main__":
    main()
