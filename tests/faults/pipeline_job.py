#!/usr/bin/env python3
"""A pipelined MLP (2 stages) on synthetic data, with the command line of
examples/python/lenet5.py that tests/faults/backup_resume.sh drives
(--epochs, --train-size, --batch-size, --learning-rate, --seed,
--backup-dir, --backup-every, --save-weights): BackupAndRestore with
pipeline stages, killed and restarted (python.pipeline_backup_restart)."""
import argparse

import torch

import tarantella as tnt


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--batch-size", type=int, default=64, help="GLOBAL batch size")
    p.add_argument("--learning-rate", type=float, default=0.02)
    p.add_argument("--train-size", type=int, default=6400)
    p.add_argument("--seed", type=int, default=3)
    p.add_argument("--backup-dir")
    p.add_argument("--backup-every", type=int, default=0)
    p.add_argument("--save-weights")
    p.add_argument("--verbose", type=int, default=2)
    p.add_argument("--val-size", type=int, default=0, help="ignored (lenet5.py's flag)")
    p.add_argument("--test-size", type=int, default=0, help="ignored (lenet5.py's flag)")
    a = p.parse_args()

    tnt.set_seed(a.seed)
    g = torch.Generator().manual_seed(a.seed)
    x = torch.randn(a.train_size, 32, generator=g)
    y = torch.randint(0, 10, (a.train_size,), generator=g)
    net = torch.nn.Sequential(torch.nn.Linear(32, 256), torch.nn.ReLU(),
                              torch.nn.Linear(256, 256), tnt.nn.SplitPoint(), torch.nn.Tanh(),
                              torch.nn.Linear(256, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10))
    model = tnt.Model(net, pipeline_stages=2, micro_batches=4)
    model.compile(optimizer=torch.optim.SGD(net.parameters(), lr=a.learning_rate, momentum=0.9),
                  loss=torch.nn.CrossEntropyLoss(), metrics=["sparse_categorical_accuracy"])
    callbacks = []
    if a.backup_dir:
        callbacks.append(tnt.callbacks.BackupAndRestore(a.backup_dir, save_freq=a.backup_every))
    model.fit((x, y), batch_size=a.batch_size, epochs=a.epochs, callbacks=callbacks,
              verbose=a.verbose)
    if a.save_weights:
        model.save_weights(a.save_weights)


if __name__ == "__main__":
    main()
