"""A batched tnt.data.Dataset as this rank's stream of micro-batches.

    train = tnt.data.Dataset.from_tensor_slices((x, y)).shuffle(len(x), seed=1).batch(64)
    dist = tnt.data.distribute(train)           # 64 is the GLOBAL batch size
    optimizer = tnt.DistributedOptimizer(opt, loader=dist)
    for epoch in range(5):
        for xb, yb in dist: ...                 # this rank's samples of each batch

Each rank computes only its own samples of every global batch (the C++
distribution rewrites the pipeline); the same shuffle order on every rank.
"""
from .. import _tarantella


class DistributedDataset:
    """This rank's micro-batches of a batched Dataset; each iteration is one epoch."""

    def __init__(self, dataset, group=None):
        self._dist = _tarantella.DistributedDataset(
            dataset, group if group is not None else _tarantella.ProcessGroup())
        self.share = _tarantella.BatchShare()
        self.epoch = 0

    def __iter__(self):
        epoch, self.epoch = self.epoch, self.epoch + 1
        return self.iterate(epoch)

    def iterate(self, epoch):
        """The micro-batches of `epoch` (tuples of tensors)."""
        return self._dist.iterate(epoch, self.share)

    def __len__(self):
        n = self._dist.cardinality()
        if n < 0:
            raise TypeError("the distributed dataset's length is not known")
        return n

    @property
    def global_batch_size(self):
        return self._dist.global_batch_size

    def __repr__(self):
        return f"<tarantella.data.DistributedDataset: {self._dist.describe()}>"


def distribute(dataset, group=None):
    """DistributedDataset(dataset, group): over the world group by default."""
    return DistributedDataset(dataset, group)
