#!/usr/bin/env python3
"""The Tarantella manual's Quick Start in PyTorch: LeNet-5 on Fashion-MNIST.

    tarantella -n 2 -- examples/python/lenet5.py --epochs 8

Step by step, what changes against a plain PyTorch script:
  1. `import tarantella as tnt` starts the runtime (one process per rank);
  2. `tnt.Model(module)` wraps the network;
  3. batch sizes are GLOBAL: with batch_size=64 on 4 ranks each rank computes
     16 samples of every batch, and the result is that of one process with
     batches of 64 (up to rounding);
  4. only the master rank prints and writes files (tnt.is_master_rank()).
Data: a plain map-style torch Dataset over Debian's dataset-fashion-mnist
files; each rank reads only its own samples of every global batch.
"""
import argparse
import gzip
import os

import numpy as np
import torch

import tarantella as tnt  # 1. start the runtime

DATA = "/usr/share/datasets/fashion-mnist"


class LeNet5(torch.nn.Module):
    """conv 1->6 5x5 pad 2, ReLU, max-pool 2; conv 6->16 5x5, ReLU, max-pool 2;
    fc 400->120->84->10 (logits). The C++ example's network."""

    def __init__(self, dropout=0.0):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(1, 6, 5, padding=2)
        self.conv2 = torch.nn.Conv2d(6, 16, 5)
        self.fc1 = torch.nn.Linear(400, 120)
        self.fc2 = torch.nn.Linear(120, 84)
        self.fc3 = torch.nn.Linear(84, 10)
        # Optional (no parameters: the weight files stay alike).
        self.drop = torch.nn.Dropout(dropout) if dropout else None

    def forward(self, x):
        x = torch.max_pool2d(torch.relu(self.conv1(x)), 2)
        x = torch.max_pool2d(torch.relu(self.conv2(x)), 2)
        x = x.flatten(1)
        x = torch.relu(self.fc1(x))
        if self.drop is not None:
            x = self.drop(x)
        x = torch.relu(self.fc2(x))
        return self.fc3(x)


class FashionMNIST(torch.utils.data.Dataset):
    """(image float32 [1, 28, 28] in [0, 1], label int64) from the IDX files."""

    def __init__(self, split, directory=DATA, start=0, count=None):
        prefix = "train" if split == "train" else "t10k"
        with gzip.open(os.path.join(directory, f"{prefix}-images-idx3-ubyte.gz")) as f:
            images = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 1, 28, 28)
        with gzip.open(os.path.join(directory, f"{prefix}-labels-idx1-ubyte.gz")) as f:
            labels = np.frombuffer(f.read(), np.uint8, offset=8)
        end = len(labels) if count is None else start + count
        self.images = torch.from_numpy(images[start:end].astype(np.float32) / 255.0)
        self.labels = torch.from_numpy(labels[start:end].astype(np.int64))

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        return self.images[i], self.labels[i]


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--epochs", type=int, default=8)
    p.add_argument("--batch-size", type=int, default=64, help="GLOBAL batch size")
    p.add_argument("--learning-rate", type=float, default=0.1)
    p.add_argument("--train-size", type=int, default=55000)
    p.add_argument("--val-size", type=int, default=5000)
    p.add_argument("--test-size", type=int, default=10000)
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--no-shuffle", action="store_true")
    p.add_argument("--init-weights", help="torch.save'd state_dict to start from")
    p.add_argument("--save-weights", help="write the trained weights here (torch.save format)")
    p.add_argument("--checkpoint-dir", help="ModelCheckpoint every epoch into this folder")
    p.add_argument("--backup-dir", help="BackupAndRestore (with tarantella --max-restarts)")
    p.add_argument("--backup-every", type=int, default=0,
                   help="also back up every N steps (0: at epoch ends only)")
    p.add_argument("--deterministic", type=int, default=0, help="chunk size (bitwise mode)")
    p.add_argument("--dropout", type=float, default=0.0, help="Dropout after fc1 (0: none)")
    p.add_argument("--shard-optimizer", action="store_true",
                   help="shard the optimizer state over the ranks (ZeRO-1)")
    p.add_argument("--verbose", type=int, default=1)
    p.add_argument("--data", default=DATA, help="folder with the Fashion-MNIST IDX files")
    a = p.parse_args()

    tnt.set_seed(a.seed)  # weights and shuffling: reruns (at any rank count) alike
    train = FashionMNIST("train", a.data, count=a.train_size)
    val = FashionMNIST("train", a.data, start=a.train_size, count=a.val_size)
    test = FashionMNIST("test", a.data, count=a.test_size)

    model = tnt.Model(LeNet5(a.dropout))  # 2. wrap the network
    if a.init_weights:
        model.load_weights(a.init_weights)
    model.compile(optimizer=torch.optim.SGD(model.parameters(), lr=a.learning_rate),
                  loss=torch.nn.CrossEntropyLoss(),
                  metrics=["sparse_categorical_accuracy"],
                  deterministic=a.deterministic or None,
                  shard_optimizer=a.shard_optimizer or None)
    if a.verbose:
        model.summary()

    callbacks = []
    if a.checkpoint_dir:
        callbacks.append(tnt.callbacks.ModelCheckpoint(
            os.path.join(a.checkpoint_dir, "epoch-{epoch:04d}.pt")))
    if a.backup_dir:
        callbacks.append(tnt.callbacks.BackupAndRestore(a.backup_dir, save_freq=a.backup_every))
    if a.epochs > 0:
        model.fit(train, batch_size=a.batch_size, epochs=a.epochs,  # 3. the GLOBAL batch
                  shuffle=not a.no_shuffle, validation_data=val if a.val_size else None,
                  callbacks=callbacks, verbose=a.verbose)

    loss, accuracy = model.evaluate(test, batch_size=a.batch_size)
    if tnt.is_master_rank():  # 4. the master rank reports
        print(f"test loss: {loss:.4f}  test accuracy: {accuracy:.4f} "
              f"({tnt.get_size()} ranks, global batch {a.batch_size})")
    if a.save_weights:
        model.save_weights(a.save_weights)


if __name__ == "__main__":
    main()
