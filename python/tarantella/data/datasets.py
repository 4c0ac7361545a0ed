"""Ready-made datasets of the C++ library, as tnt.data.Dataset.

    train = tnt.data.datasets.fashion_mnist("train").shuffle(60000, seed=1).batch(64)
"""
from __future__ import annotations

import os
from typing import Union

from .._tarantella import Dataset
from .._tarantella import datasets as _datasets

FASHION_MNIST_DIR = _datasets.FASHION_MNIST_DIR


def fashion_mnist(split: str, dir: Union[str, "os.PathLike[str]"] = FASHION_MNIST_DIR) -> Dataset:
    """Fashion-MNIST from Debian's dataset-fashion-mnist.

    Args:
        split: "train" (60000 samples) or "test" (10000).
        dir: The folder of the IDX files.

    Returns:
        Elements (image float32 [1, 28, 28] in [0, 1], label int64).
    """
    return _datasets.fashion_mnist(split, os.fspath(dir))


def mnist_format(images_path: Union[str, "os.PathLike[str]"],
                 labels_path: Union[str, "os.PathLike[str]"]) -> Dataset:
    """Any pair of MNIST-format IDX files.

    Args:
        images_path: The images' IDX file.
        labels_path: The labels' IDX file.

    Returns:
        Elements as fashion_mnist's.
    """
    return _datasets.mnist_format(os.fspath(images_path), os.fspath(labels_path))
