#!/usr/bin/python3
"""What a Python callback costs per training step in tnt.Model.fit: a tiny
network (Linear 8 -> 2, global batch 8) so that the step itself is short,
timed per step (median of epochs 2.. of each run, the first is warm-up) for

    none         no callback
    epoch_end    K callbacks that override only on_epoch_end
    batch_hooks  K that override on_train_batch_begin/_end (no-ops)

(K = --callbacks, 10 by default, so that the cost of a hook call, about a
microsecond, stands out of a step's noise: divide the difference by K.)

and prints one line:  RESULT {json}  (microseconds per step: wall time, and
the process's CPU time, which other processes on a busy machine disturb
less). Run it with
two builds' packages to compare them (PYTHONPATH picks the package):

    PYTHONPATH=build/python /usr/bin/python3 bench/train_step/callback_cost.py
"""
import argparse
import json
import statistics
import time

import torch

import tarantella as tnt


class EpochEnd(tnt.callbacks.Callback):
    def on_epoch_end(self, epoch, logs=None):
        pass


class BatchHooks(tnt.callbacks.Callback):
    def on_train_batch_begin(self, batch, logs=None):
        pass

    def on_train_batch_end(self, batch, logs=None):
        pass


def per_step_us(callbacks, steps, epochs):
    torch.manual_seed(0)
    x, y = torch.randn(8 * steps, 8), torch.randint(0, 2, (8 * steps,))
    net = torch.nn.Linear(8, 2)
    model = tnt.Model(net)
    model.compile(optimizer=torch.optim.SGD(net.parameters(), lr=0.01),
                  loss=torch.nn.CrossEntropyLoss())
    wall, cpu = [], []
    for _ in range(epochs):
        start, start_cpu = time.perf_counter(), time.process_time()
        model.fit(x, y, batch_size=8, epochs=1, shuffle=False, verbose=0, callbacks=callbacks)
        wall.append((time.perf_counter() - start) / steps * 1e6)
        cpu.append((time.process_time() - start_cpu) / steps * 1e6)
    return statistics.median(wall[1:]), statistics.median(cpu[1:])


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--steps", type=int, default=500, help="steps per epoch")
    p.add_argument("--epochs", type=int, default=7, help="epochs, the first one not counted")
    p.add_argument("--rounds", type=int, default=3, help="rounds of the three variants")
    p.add_argument("--callbacks", type=int, default=10, help="callbacks of each kind (K)")
    a = p.parse_args()
    k = a.callbacks
    variants = {"none": lambda: [], "epoch_end": lambda: [EpochEnd() for _ in range(k)],
                "batch_hooks": lambda: [BatchHooks() for _ in range(k)]}
    results = {name: [] for name in variants}
    for _ in range(a.rounds):          # interleaved, so drift hits all alike
        for name, make in variants.items():
            results[name].append(per_step_us(make(), a.steps, a.epochs))
    median = {k: [statistics.median(r[i] for r in v) for i in (0, 1)]
              for k, v in results.items()}
    if tnt.is_master_rank():
        print("RESULT " + json.dumps({
            "ranks": tnt.get_size(), "steps": a.steps, "callbacks": k,
            "wall_us_per_step": {k: round(m[0], 1) for k, m in median.items()},
            "cpu_us_per_step": {k: round(m[1], 1) for k, m in median.items()}}), flush=True)


if __name__ == "__main__":
    main()
