"""tnt.data.DataLoader: torch's DataLoader, distributed.

A drop-in for torch.utils.data.DataLoader whose batch_size is GLOBAL: every
rank iterates the same sequence of global batches and gets its own share of
each, by the micro-batch rule (of a batch of L samples, rank r gets L // N,
one more for the first L % N ranks, as one contiguous run, in rank order).
Only this rank's samples are read and collated (torch's default_collate
unless collate_fn is given), by torch's own DataLoader machinery, so
num_workers worker processes, pin_memory and the rest behave as in torch.

The order:
  * shuffle=False: 0, 1, 2, ... (torch's SequentialSampler);
  * shuffle=True, seed=None: torch's RandomSampler draw, taken from torch's
    global generator at the same moment torch takes it, then rank 0's draw
    broadcast; so with torch.manual_seed set alike on every rank, rank 0
    sees exactly the permutation torch's own DataLoader would give, and the
    other ranks the same;
  * shuffle=True, seed=S: a permutation that is a pure function of (S, epoch),
    with no collective (as tnt::data::make_data_loader in C++).
When a short last batch leaves a rank without samples (L < N), that rank gets
an empty batch (first dimension 0, same trailing shapes and dtypes), so every
rank runs the same number of steps; its gradient then counts as zero.

`loader.share` holds this rank's share (n_r, L) of the batch last handed out;
tnt.DistributedOptimizer reads it to weight the gradient by n_r / L, exact
for uneven shares: with loader=loader, or without loader= through
data/_handed_out.py, which every batch handed out here is told to.
"""
from __future__ import annotations

from typing import Any, Callable, Dict, Iterator, List, Optional, Sized, Tuple

import torch
import torch.utils.data

from .. import _tarantella
from .._args import check_bool, check_int
from . import _handed_out


class _RankBatches:
    """The batch sampler handed to torch's DataLoader: this rank's indices of
    every global batch. Iterated once per epoch, in the main process, when
    torch's loader iterator starts; records (n_r, L) of each batch in `plan`."""

    def __init__(self, loader: DataLoader) -> None:
        self._loader = loader
        self.plan: List[Tuple[int, int]] = []

    def __len__(self) -> int:
        return len(self._loader)

    def __iter__(self) -> Iterator[List[int]]:
        loader = self._loader
        order = loader._order()
        n, b = len(order), loader.batch_size
        rank, size = loader._group.rank, loader._group.size
        self.plan = []
        for first in range(0, len(self) * b, b):
            global_size = min(b, n - first)
            lo, hi = _tarantella.micro_batch_range(global_size, size, rank)
            self.plan.append((hi - lo, global_size))
            # No sample for this rank: read one and keep its shapes only.
            yield order[first + lo:first + hi] if hi > lo else order[first:first + 1]


class DataLoader:
    """torch's DataLoader with a GLOBAL batch size: this rank's share of each batch.

    Iterating gives this rank's share of every global batch of `batch_size`
    samples of the map-style `dataset` (len and indexing), the same sequence
    of batches on every rank. Every rank of the group must iterate it alike.
    Further keyword arguments (pin_memory, worker_init_fn,
    persistent_workers, ...) go to torch's DataLoader.

    Attributes:
        share: This rank's (n_r, L) of the batch last handed out.
        epoch: The epoch the next iteration gives.
    """

    def __init__(self, dataset: torch.utils.data.Dataset[object], batch_size: int = 1,
                 shuffle: bool = False, seed: Optional[int] = None, num_workers: int = 0,
                 drop_last: bool = False,
                 collate_fn: Optional[Callable[[List[Any]], Any]] = None,
                 group: Optional[_tarantella.ProcessGroup] = None,
                 **torch_kwargs: object) -> None:
        """Makes the loader.

        Args:
            dataset: A map-style dataset (__len__ and __getitem__).
            batch_size: The GLOBAL batch size, at least the number of ranks.
            shuffle: Reshuffle every epoch (the same order on every rank).
            seed: The shuffle's seed; None: drawn from torch's generator on
                rank 0, as torch's RandomSampler does, and broadcast.
            num_workers: torch's worker processes.
            drop_last: Drop a short last batch.
            collate_fn: Makes a batch of a list of samples (torch's
                default_collate by default).
            group: The ranks (default: every rank).
            **torch_kwargs: Further arguments of torch's DataLoader.

        Raises:
            TypeError: An argument of the wrong type, or an argument torch's
                DataLoader does not have.
            ValueError: batch_size < 1, or sampler=, batch_sampler= or generator= given.
            tarantella.Error: This rank is not in `group`, or the batch is
                smaller than the number of ranks.
        """
        where = "tnt.data.DataLoader"
        # Never ignored: each would change which samples a rank reads, which
        # this loader decides (the same order on every rank).
        for unsupported in ("sampler", "batch_sampler", "generator"):
            if torch_kwargs.pop(unsupported, None) is not None:
                raise ValueError(f"tnt.data.DataLoader chooses the samples of each rank itself, "
                                 f"so {unsupported}= is not supported: use shuffle= and seed=")
        self.dataset = dataset
        self.batch_size = check_int(where, "batch_size", batch_size)
        if self.batch_size < 1:
            raise ValueError(f"tnt.data.DataLoader: batch_size={batch_size} is invalid: give the "
                             "GLOBAL batch size, 1 or more, e.g. batch_size=64")
        self.shuffle = check_bool(where, "shuffle", shuffle)
        self.seed = None if seed is None else check_int(where, "seed", seed)
        self.drop_last = check_bool(where, "drop_last", drop_last)
        self.num_workers = check_int(where, "num_workers", num_workers)
        self._group = group if group is not None else _tarantella.world()
        if not self._group.is_member:
            raise _tarantella.Error(f"tnt.data.DataLoader: this rank is not a member of "
                                    f"{self._group!r}: load only on the ranks of its group")
        if self.batch_size < self._group.size:
            raise _tarantella.Error(
                f"[tarantella rank {self._group.rank}] tnt.data.DataLoader: global batch size "
                f"{self.batch_size} is smaller than the number of ranks {self._group.size}: use a "
                f"batch size of at least {self._group.size} or fewer ranks")
        self.share = _tarantella.BatchShare()
        self.epoch = 0
        self._batches = _RankBatches(self)
        self._torch_loader: torch.utils.data.DataLoader[object] = torch.utils.data.DataLoader(
            dataset, batch_sampler=self._batches, num_workers=num_workers,
            collate_fn=collate_fn, **torch_kwargs)  # type: ignore[arg-type]

    def _length(self) -> int:
        if not isinstance(self.dataset, Sized):
            raise TypeError(f"tnt.data.DataLoader: dataset must be map-style, with __len__ and "
                            f"__getitem__, got a {type(self.dataset).__name__}")
        return len(self.dataset)

    def __len__(self) -> int:
        n, b = self._length(), self.batch_size
        return n // b if self.drop_last else (n + b - 1) // b

    def _order(self) -> List[int]:
        n = self._length()
        epoch, self.epoch = self.epoch, self.epoch + 1
        if not self.shuffle:
            return list(range(n))
        if self.seed is not None:
            return _tarantella.loader_order(n, True, int(self.seed), epoch)
        # As torch's RandomSampler draws its generator's seed.
        seed = torch.empty((), dtype=torch.int64).random_()
        self._group.broadcast(seed, 0)
        generator = torch.Generator()
        generator.manual_seed(int(seed.item()))
        order: List[int] = torch.randperm(n, generator=generator).tolist()
        return order

    # A batch is whatever collate_fn makes (torch's default_collate: tensors,
    # or tuples, lists, dicts of them), hence Any.
    def __iter__(self) -> Iterator[Any]:
        for step, batch in enumerate(self._torch_loader):
            local, global_size = self._batches.plan[step]
            if local == 0:
                batch = _empty_like(batch)
            self.share.set(local, global_size)
            _handed_out.handed_out(local, global_size, self._group)
            yield batch


def _empty_like(batch: object) -> object:
    """The collated batch with no sample: every tensor narrowed to 0 rows."""
    if isinstance(batch, torch.Tensor):
        return batch[:0]
    if isinstance(batch, tuple) and hasattr(batch, "_fields"):
        return getattr(batch, "_make")(_empty_like(b) for b in batch)
    if isinstance(batch, (tuple, list)):
        return type(batch)(_empty_like(b) for b in batch)
    if isinstance(batch, dict):
        return {k: _empty_like(v) for k, v in batch.items()}
    return batch
