"""tnt.data: the C++ input pipeline bound to Python, and a distributed DataLoader.

    ds = tnt.data.Dataset.from_tensor_slices((x, y)).shuffle(len(x), seed=42).batch(64)
    for x_batch, y_batch in ds: ...            # one epoch; the next loop reshuffles

    loader = tnt.data.DataLoader(torchvision_dataset, batch_size=64, shuffle=True)
    for x, y in loader: ...                     # this rank's share of every global batch

    from tarantella.data import transforms as T  # images, seeded augmentation
    ds = tnt.data.from_image_folder("train", num_workers=4).map_seeded(
        T.compose([T.random_resized_crop(224), T.random_horizontal_flip(), T.to_float()]), seed=1)
"""
from .. import _tarantella
from .._tarantella import Dataset, BatchShare
from . import datasets, transforms
from .images import (list_image_folder, from_image_folder, from_image_files, from_image_shards,
                     pack_image_shards, index_image_shard)
from .loader import DataLoader
from .distribute import DistributedDataset, distribute

__all__ = ["Dataset", "BatchShare", "DataLoader", "DistributedDataset", "distribute",
           "datasets", "transforms", "micro_batch_range", "list_image_folder", "from_image_folder",
           "from_image_files", "from_image_shards", "pack_image_shards", "index_image_shard"]

micro_batch_range = _tarantella.micro_batch_range
