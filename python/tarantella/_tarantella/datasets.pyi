# Types of _tarantella.datasets (data_bindings.cpp): the C++ library's ready-made datasets.
from . import Dataset

FASHION_MNIST_DIR: str

def fashion_mnist(split: str, dir: str = ...) -> Dataset: ...
def mnist_format(images_path: str, labels_path: str) -> Dataset: ...
