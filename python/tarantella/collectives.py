"""Collectives for users' own code, over the world group or a given group.

Every rank of the group must make the same calls in the same order; a rank
that calls a different one gets tnt.MismatchError on every rank, a rank that
does not arrive gives the others tnt.TimeoutError.
"""
import io
import numbers

import torch

from . import _tarantella


def _group(group):
    return _tarantella.world() if group is None else group


def allreduce(tensor, op="sum", group=None):
    """In place: every rank's `tensor` becomes the reduction ("sum", "average",
    "min", "max", "product") over the group. Returns the tensor."""
    group = _group(group)
    if tensor.is_contiguous():
        return group.allreduce(tensor, op)
    tensor.copy_(group.allreduce(tensor.contiguous(), op))
    return tensor


def broadcast(tensor, root=0, group=None):
    """In place: every rank's `tensor` becomes `root`'s. Returns the tensor."""
    group = _group(group)
    if tensor.is_contiguous():
        return group.broadcast(tensor, root)
    tensor.copy_(group.broadcast(tensor.contiguous(), root))
    return tensor


def allgather(tensor, group=None):
    """The ranks' tensors concatenated along dimension 0, in rank order."""
    return _group(group).allgather(tensor.contiguous())


def barrier(group=None):
    _group(group).barrier()


def broadcast_object(obj, root=0, group=None):
    """`root`'s picklable object (tensors included, through torch.save) on every rank."""
    group = _group(group)
    data = b""
    if group.rank == root:
        buffer = io.BytesIO()
        torch.save(obj, buffer)
        data = buffer.getvalue()
    data = group.broadcast_bytes(data, root)
    # Any picklable object, as its docstring says: torch 2.6+ loads only
    # tensors and plain containers by default (weights_only=True). The bytes
    # come from this job's own root rank.
    return obj if group.rank == root else torch.load(io.BytesIO(data), weights_only=False)


def sum_over_ranks(value, group=None):
    """The sum over the group's ranks of `value`: a number, a tensor, or a
    tuple/list of them (one collective for all the numbers). Returns the same
    structure; the input is not changed. For metrics of a distributed
    evaluation, e.g. `correct, total = tnt.sum_over_ranks((correct, total))`."""
    group = _group(group)
    if isinstance(value, (tuple, list)):
        numbers_at = [i for i, v in enumerate(value) if _is_number(v)]
        out = list(value)
        if numbers_at:
            packed = torch.tensor([float(value[i]) for i in numbers_at], dtype=torch.float64)
            group.allreduce(packed, "sum")
            for k, i in enumerate(numbers_at):
                out[i] = _like(value[i], packed[k].item())
        for i, v in enumerate(value):
            if i not in numbers_at:
                out[i] = sum_over_ranks(v, group)
        return type(value)(out)
    if torch.is_tensor(value):
        return group.allreduce(value.detach().clone().contiguous(), "sum")
    if _is_number(value):
        return sum_over_ranks((value,), group)[0]
    raise TypeError(f"sum_over_ranks: a {type(value).__name__} cannot be summed over ranks: "
                    "give a number, a tensor, or a tuple/list of them")


def _is_number(v):
    return isinstance(v, numbers.Number) and not torch.is_tensor(v)


def _like(original, total):
    if isinstance(original, bool) or not isinstance(original, numbers.Integral):
        return total
    return int(round(total))
