"""Ready-made datasets of the C++ library, as tnt.data.Dataset.

    train = tnt.data.datasets.fashion_mnist("train").shuffle(60000, seed=1).batch(64)
"""
from .._tarantella import datasets as _datasets

FASHION_MNIST_DIR = _datasets.FASHION_MNIST_DIR


def fashion_mnist(split, dir=FASHION_MNIST_DIR):
    """Fashion-MNIST "train" (60000) or "test" (10000) from Debian's
    dataset-fashion-mnist: elements (image float32 [1, 28, 28] in [0, 1], label int64)."""
    return _datasets.fashion_mnist(split, dir)


def mnist_format(images_path, labels_path):
    """Any pair of MNIST-format IDX files, elements as fashion_mnist's."""
    return _datasets.mnist_format(images_path, labels_path)
