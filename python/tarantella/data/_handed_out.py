"""Who hears which share of a global batch a tnt loader handed out last.

Why: tnt.DistributedOptimizer(opt) without loader= weights this rank's
gradient by n_r / B of the batch being trained on, exactly as with
loader=. Every tnt.data.DataLoader and DistributedDataset tells the
followers here (such optimizers) each batch's (n_r, B) as it yields the
batch, so a loop over any tnt loader is exact without naming it. A follower
is held weakly: a dropped optimizer stops following.
"""
from __future__ import annotations

import weakref
from typing import Protocol

from .. import _tarantella


class Follower(Protocol):
    """What follows the batches handed out: DistributedOptimizer without loader=."""

    def batch_handed_out(self, local: int, global_size: int,
                         group: _tarantella.ProcessGroup) -> None:
        """Called as a tnt loader yields a batch.

        Args:
            local: This rank's samples of the batch (n_r).
            global_size: The batch's samples over all ranks (B).
            group: The loader's group.
        """


_followers: "weakref.WeakSet[Follower]" = weakref.WeakSet()


def follow(follower: Follower) -> None:
    """Tells `follower` of every batch any tnt loader hands out from now on.

    Args:
        follower: Held weakly.
    """
    _followers.add(follower)


def handed_out(local: int, global_size: int, group: _tarantella.ProcessGroup) -> None:
    """Called by the tnt loaders as they yield a batch.

    Args:
        local: This rank's samples of the batch.
        global_size: The batch's samples over all ranks.
        group: The loader's group.
    """
    for follower in list(_followers):
        follower.batch_handed_out(local, global_size, group)
