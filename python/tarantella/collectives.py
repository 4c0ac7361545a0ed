"""Collectives for users' own code, over the world group or a given group.

Every rank of the group must make the same calls in the same order; a rank
that calls a different one gets tnt.MismatchError on every rank, a rank that
does not arrive gives the others tnt.TimeoutError.
"""
from __future__ import annotations

import io
import numbers
from typing import List, Optional, Tuple, TypeVar, Union

import torch

from . import _tarantella

T = TypeVar("T")
#: What sum_over_ranks takes: a number, a tensor, or a tuple/list of them (nested).
Summable = Union[int, float, torch.Tensor, Tuple["Summable", ...], List["Summable"]]
S = TypeVar("S", bound=Summable)


def _group(group: Optional[_tarantella.ProcessGroup]) -> _tarantella.ProcessGroup:
    return _tarantella.world() if group is None else group


def allreduce(tensor: torch.Tensor, op: str = "sum",
              group: Optional[_tarantella.ProcessGroup] = None) -> torch.Tensor:
    """In place: every rank's `tensor` becomes the reduction over the group.

    Every rank of the group must call it, with a tensor of the same shape and dtype.

    Args:
        tensor: This rank's tensor; overwritten with the result.
        op: "sum", "average", "min", "max" or "product".
        group: The ranks (default: every rank).

    Returns:
        `tensor`.

    Raises:
        tarantella.MismatchError: Ranks passed different shapes, dtypes or ops.
        tarantella.TimeoutError: A rank did not arrive.
    """
    group = _group(group)
    if tensor.is_contiguous():
        return group.allreduce(tensor, op)
    tensor.copy_(group.allreduce(tensor.contiguous(), op))
    return tensor


def broadcast(tensor: torch.Tensor, root: int = 0,
              group: Optional[_tarantella.ProcessGroup] = None) -> torch.Tensor:
    """In place: every rank's `tensor` becomes `root`'s. Collective over the group.

    Args:
        tensor: This rank's tensor (same shape and dtype on every rank).
        root: The rank (in the group) whose tensor is sent.
        group: The ranks (default: every rank).

    Returns:
        `tensor`.
    """
    group = _group(group)
    if tensor.is_contiguous():
        return group.broadcast(tensor, root)
    tensor.copy_(group.broadcast(tensor.contiguous(), root))
    return tensor


def allgather(tensor: torch.Tensor,
              group: Optional[_tarantella.ProcessGroup] = None) -> torch.Tensor:
    """The ranks' tensors concatenated along dimension 0, in rank order. Collective.

    Args:
        tensor: This rank's tensor; first dimensions may differ between ranks.
        group: The ranks (default: every rank).

    Returns:
        A new tensor, the same on every rank.
    """
    return _group(group).allgather(tensor.contiguous())


def barrier(group: Optional[_tarantella.ProcessGroup] = None) -> None:
    """Returns once every rank of the group has called it.

    Args:
        group: The ranks (default: every rank).
    """
    _group(group).barrier()


def broadcast_object(obj: T, root: int = 0,
                     group: Optional[_tarantella.ProcessGroup] = None) -> T:
    """`root`'s object on every rank (through torch.save). Collective.

    Args:
        obj: Any picklable object (tensors included); only root's is used.
            The other ranks get its tensors on the CPU.
        root: The rank (in the group) that sends.
        group: The ranks (default: every rank).

    Returns:
        Root's object (root gets its own back, the others a copy).
    """
    group = _group(group)
    data = b""
    if group.rank == root:
        buffer = io.BytesIO()
        torch.save(obj, buffer)
        data = buffer.getvalue()
    data = group.broadcast_bytes(data, root)
    if group.rank == root:
        return obj
    # Any picklable object, as its docstring says: torch 2.6+ loads only
    # tensors and plain containers by default (weights_only=True). The bytes
    # come from this job's own root rank. Tensors land on the CPU: the root's
    # cuda:0 is another rank's GPU, or none.
    loaded: T = torch.load(io.BytesIO(data), map_location="cpu", weights_only=False)
    return loaded


def sum_over_ranks(value: S, group: Optional[_tarantella.ProcessGroup] = None) -> S:
    """The sum over the group's ranks of `value`. Collective.

    For metrics of a distributed evaluation, e.g.
    `correct, total = tnt.sum_over_ranks((correct, total))`.

    Args:
        value: A number, a tensor, or a tuple/list of them (nested); all the
            numbers go in one collective.
        group: The ranks (default: every rank).

    Returns:
        The same structure with summed values (ints stay ints); `value` is
        not changed.

    Raises:
        TypeError: `value` holds something that is not a number or tensor.
    """
    group = _group(group)
    if isinstance(value, (tuple, list)):
        numbers_at = [i for i, v in enumerate(value) if _is_number(v)]
        parts: List[Summable] = list(value)
        if numbers_at:
            packed = torch.tensor([_as_float(value[i]) for i in numbers_at],
                                  dtype=torch.float64)
            group.allreduce(packed, "sum")
            for k, i in enumerate(numbers_at):
                parts[i] = _like(value[i], packed[k].item())
        for i, v in enumerate(value):
            if i not in numbers_at:
                parts[i] = sum_over_ranks(v, group)
        return type(value)(parts)  # type: ignore[return-value]
    if isinstance(value, torch.Tensor):
        result: torch.Tensor = group.allreduce(value.detach().clone().contiguous(), "sum")
        return result  # type: ignore[return-value]
    if _is_number(value):
        total: Tuple[Summable, ...] = sum_over_ranks((value,), group)
        return total[0]  # type: ignore[return-value]
    raise TypeError(f"sum_over_ranks: a {type(value).__name__} cannot be summed over ranks: "
                    "give a number, a tensor, or a tuple/list of them")


def _is_number(v: object) -> bool:
    return isinstance(v, numbers.Number) and not isinstance(v, torch.Tensor)


def _as_float(v: object) -> float:
    assert isinstance(v, (int, float, numbers.Real))
    return float(v)


def _like(original: object, total: float) -> Union[int, float]:
    if isinstance(original, bool) or not isinstance(original, numbers.Integral):
        return total
    return int(round(total))
