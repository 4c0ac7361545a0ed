#!/usr/bin/python3
"""The Python front end's twin of bench_train_step --variant tnt: the same
networks (ddp_bench.py's, which are train_step_bench.cpp's), synthetic data,
global batch and timing, trained with tnt.Model.fit from Python. Run under
the launcher; prints one line on the master rank:  RESULT {json}

    tarantella --no-gpu -n 2 -- bench/train_step/python_bench.py --model lenet

A pass is timed from one on_epoch_begin to the next (or to on_train_end),
as the C++ bench does, so everything fit does per epoch is counted; the
first epoch is warm-up.
"""
import argparse
import importlib.util
import json
import os
import time

import torch

import tarantella as tnt

_spec = importlib.util.spec_from_file_location(
    "ddp_bench", os.path.join(os.path.dirname(os.path.abspath(__file__)), "ddp_bench.py"))
ddp_bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(ddp_bench)


class EpochTimer(tnt.callbacks.Callback):
    def __init__(self):
        super().__init__()
        self.marks = []

    def on_epoch_begin(self, epoch, logs=None):
        self.marks.append(time.perf_counter())

    def on_train_end(self, logs=None):
        self.marks.append(time.perf_counter())

    def epoch_seconds(self):
        return [b - a for a, b in zip(self.marks, self.marks[1:])]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", choices=["lenet", "mlp"], default="lenet")
    p.add_argument("--batch-size", type=int, default=256)
    p.add_argument("--steps", type=int, default=20, help="global batches per epoch")
    p.add_argument("--epochs", type=int, default=3, help="epochs, the first one not counted")
    p.add_argument("--learning-rate", type=float, default=0.01)
    p.add_argument("--seed", type=int, default=7)
    a = p.parse_args()
    x, y = ddp_bench.synthetic_data(a.model, a.batch_size * a.steps, a.seed)
    torch.manual_seed(a.seed + 1)
    net = ddp_bench.LeNet5() if a.model == "lenet" else ddp_bench.Mlp()
    model = tnt.Model(net)
    model.compile(optimizer=torch.optim.SGD(net.parameters(), lr=a.learning_rate),
                  loss="sparse_categorical_crossentropy")
    timer = EpochTimer()
    model.fit(x, y, batch_size=a.batch_size, epochs=a.epochs, steps_per_epoch=a.steps,
              shuffle=False, verbose=0, callbacks=[timer])
    if tnt.is_master_rank():
        seconds = timer.epoch_seconds()
        samples = a.batch_size * a.steps * (len(seconds) - 1)
        print("RESULT " + json.dumps({
            "variant": "python", "model": a.model, "ranks": tnt.get_size(),
            "threads": torch.get_num_threads(), "samples_per_s": samples / sum(seconds[1:]),
            "epoch_s": [round(s, 4) for s in seconds],
            "checksum": [round(x.sum().item(), 6), int(y.sum().item())],
            "blas": ddp_bench.blas_libraries()}), flush=True)


if __name__ == "__main__":
    main()
