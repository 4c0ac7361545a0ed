#!/usr/bin/env python3
"""Writes Fashion-MNIST-shaped IDX files (gzip) with synthetic images into a
folder, for machines without the data set (the GPU machines have no
network):  fake_fashion_mnist.py DIR [--train 2000 --test 500]

Each class is a fixed random 28x28 pattern plus noise, so a network learns
it: a check that trains on it sees the loss fall, as on the real data."""
import argparse
import gzip
import os

import numpy as np


def write(path, magic_dims, payload):
    header = b"".join(int(v).to_bytes(4, "big") for v in magic_dims)
    with gzip.open(path, "wb") as f:
        f.write(header + payload.tobytes())


def split(directory, prefix, n, rng, patterns):
    labels = rng.integers(0, 10, n, dtype=np.uint8)
    noise = rng.integers(0, 96, (n, 28, 28))
    images = np.clip(patterns[labels] + noise, 0, 255).astype(np.uint8)
    write(os.path.join(directory, f"{prefix}-images-idx3-ubyte.gz"), (2051, n, 28, 28), images)
    write(os.path.join(directory, f"{prefix}-labels-idx1-ubyte.gz"), (2049, n), labels)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("directory")
    p.add_argument("--train", type=int, default=2000)
    p.add_argument("--test", type=int, default=500)
    a = p.parse_args()
    os.makedirs(a.directory, exist_ok=True)
    rng = np.random.default_rng(0)
    patterns = rng.integers(0, 160, (10, 28, 28))
    split(a.directory, "train", a.train, rng, patterns)
    split(a.directory, "t10k", a.test, rng, patterns)


if __name__ == "__main__":
    main()
