"""tnt.data: the C++ input pipeline bound to Python, and a distributed DataLoader.

    ds = tnt.data.Dataset.from_tensor_slices((x, y)).shuffle(len(x), seed=42).batch(64)
    for x_batch, y_batch in ds: ...            # one epoch; the next loop reshuffles

    loader = tnt.data.DataLoader(torchvision_dataset, batch_size=64, shuffle=True)
    for x, y in loader: ...                     # this rank's share of every global batch
"""
from .. import _tarantella
from .._tarantella import Dataset, BatchShare
from . import datasets
from .loader import DataLoader
from .distribute import DistributedDataset, distribute

__all__ = ["Dataset", "BatchShare", "DataLoader", "DistributedDataset", "distribute",
           "datasets", "micro_batch_range"]

micro_batch_range = _tarantella.micro_batch_range
