"""A batched tnt.data.Dataset as this rank's stream of micro-batches.

    train = tnt.data.Dataset.from_tensor_slices((x, y)).shuffle(len(x), seed=1).batch(64)
    dist = tnt.data.distribute(train)           # 64 is the GLOBAL batch size
    optimizer = tnt.DistributedOptimizer(opt, loader=dist)
    for epoch in range(5):
        for xb, yb in dist: ...                 # this rank's samples of each batch

Each rank computes only its own samples of every global batch (the C++
distribution rewrites the pipeline); the same shuffle order on every rank.
"""
from __future__ import annotations

from typing import Iterator, Optional, Tuple

import torch

from .. import _tarantella
from . import _handed_out


class DistributedDataset:
    """This rank's micro-batches of a batched Dataset; each iteration is one epoch.

    Every rank of the group must iterate it alike (the same epochs).

    Attributes:
        share: This rank's (n_r, B) of the batch last handed out.
        epoch: The epoch the next iteration gives.
    """

    def __init__(self, dataset: _tarantella.Dataset,
                 group: Optional[_tarantella.ProcessGroup] = None,
                 pin_memory: bool = False) -> None:
        """Distributes `dataset`.

        Args:
            dataset: A batched tnt.data.Dataset (its batch size is GLOBAL).
            group: The ranks (default: every rank).
            pin_memory: Where this rank trains on a GPU (its own, as tnt.Model
                picks it), each micro-batch is collated into page-locked memory
                for it on a background thread ahead of the loop, so that
                ``x.cuda(non_blocking=True)`` does not wait (as torch's
                DataLoader(pin_memory=True)); without a GPU, or with
                TNT_USE_GPU=false (--no-gpu), it does nothing.

        Raises:
            TypeError: pin_memory is not a bool.
            tarantella.Error: The dataset is not batched, or its batch is
                smaller than the number of ranks.
        """
        if not isinstance(pin_memory, bool):
            raise TypeError(f"distribute(): pin_memory must be a bool, got {pin_memory!r}")
        self._group = group if group is not None else _tarantella.world()
        self._dist = _tarantella.DistributedDataset(
            dataset, group if group is not None else _tarantella.ProcessGroup(), pin_memory)
        self.share = _tarantella.BatchShare()
        self.epoch = 0

    def __iter__(self) -> Iterator[Tuple[torch.Tensor, ...]]:
        epoch, self.epoch = self.epoch, self.epoch + 1
        return self.iterate(epoch)

    def iterate(self, epoch: int) -> Iterator[Tuple[torch.Tensor, ...]]:
        """The micro-batches of `epoch` (its shuffle order).

        Args:
            epoch: Counted from 0.

        Returns:
            An iterator over tuples of tensors, this rank's share of each batch.
        """
        for element in self._dist.iterate(epoch, self.share):
            local, global_size = self.share.get()
            _handed_out.handed_out(local, global_size, self._group)
            yield element

    def __len__(self) -> int:
        n = self._dist.cardinality()
        if n < 0:
            raise TypeError("the distributed dataset's length is not known")
        return n

    @property
    def global_batch_size(self) -> int:
        """The batch size over all ranks."""
        return self._dist.global_batch_size

    def __repr__(self) -> str:
        return f"<tarantella.data.DistributedDataset: {self._dist.describe()}>"


def distribute(dataset: _tarantella.Dataset,
               group: Optional[_tarantella.ProcessGroup] = None,
               pin_memory: bool = False) -> DistributedDataset:
    """This rank's micro-batches of `dataset`: DistributedDataset(dataset, group, pin_memory).

    Args:
        dataset: A batched tnt.data.Dataset (its batch size is GLOBAL).
        group: The ranks (default: every rank).
        pin_memory: On a GPU, micro-batches in page-locked memory, made ahead
            on a background thread (see DistributedDataset).

    Returns:
        The distributed dataset.
    """
    return DistributedDataset(dataset, group, pin_memory)
