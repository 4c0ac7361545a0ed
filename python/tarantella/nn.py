"""tnt.nn: SyncBatchNorm for Python modules, and SplitPoint for pipeline stages.

    net = tnt.nn.convert_sync_batchnorm(net)   # every BatchNorm{1,2,3}d, recursively
    model = tnt.Model(net)                     # normalizes over the model's group

In training, tnt.nn.SyncBatchNorm normalizes with the mean and variance of
the GLOBAL batch (the micro-batches of all ranks of its group); outputs,
gradients and running statistics are those of torch's BatchNorm over the
whole batch in one process, also with uneven micro-batches and ranks
without samples. In evaluation the running statistics normalize and nothing
is sent. The arithmetic is the C++ tnt::nn::SyncBatchNorm's (a C++ autograd
function; the GIL is released while it communicates); this class is the
torch.nn.Module around it, with torch's BatchNorm parameters, buffers and
state_dict keys.

Group: the one given; else a tnt.Model gives its group when it wraps (and
compiles) the module; else (your own loop) the world group.
"""
from __future__ import annotations

from typing import Optional, TypeVar, cast

import torch
from torch.nn.modules.batchnorm import _BatchNorm

from . import _tarantella as _t

M = TypeVar("M", bound=torch.nn.Module)

__all__ = ["SplitPoint", "SyncBatchNorm", "convert_sync_batchnorm"]


class SplitPoint(torch.nn.Identity):
    """Marks a stage boundary in a torch.nn.Sequential cut into pipeline stages.

    The layers before it and after it go to different stages of
    `tnt.Model(net, pipeline_stages=P)`; a model cut into P stages has P - 1
    of them, or none (it is then cut into stages of about equal parameter
    count). Everywhere else, and with one stage, it is an identity::

        net = torch.nn.Sequential(torch.nn.Linear(784, 512), torch.nn.ReLU(),
                                  tnt.nn.SplitPoint(),
                                  torch.nn.Linear(512, 10))
        model = tnt.Model(net, pipeline_stages=2, micro_batches=8)
    """


def _check_group(group: object, what: str) -> None:
    if group is not None and not isinstance(group, _t.ProcessGroup):
        raise TypeError(f"{what}: group must be a tnt.ProcessGroup (tnt.world(), or one made by "
                       f"subgroup()/split()) or None, got a {type(group).__name__}")


class SyncBatchNorm(_BatchNorm):
    """torch.nn.BatchNorm1d/2d/3d with the statistics of the global batch.

    Arguments as torch's BatchNorm (inputs [N, C] or [N, C, ...]), plus
    `group`: the ranks whose micro-batches form the batch (None: the
    tnt.Model's group, else the world). Every rank of the group must run its
    forward and backward in training, also with an empty micro-batch
    (tnt.Model.fit does so)."""

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: Optional[float] = 0.1,
                 affine: bool = True, track_running_stats: bool = True,
                 group: Optional[_t.ProcessGroup] = None,
                 device: Optional[torch.device] = None,
                 dtype: Optional[torch.dtype] = None) -> None:
        """Makes the layer.

        Args:
            num_features: C of inputs [N, C, ...].
            eps: Added to the variance.
            momentum: Of the running statistics (None: a cumulative average).
            affine: Learnable weight and bias.
            track_running_stats: Keep running mean and variance.
            group: The ranks whose micro-batches form the batch (None: the
                tnt.Model's group, else the world).
            device: Of the parameters and buffers.
            dtype: Of the parameters and buffers.

        Raises:
            TypeError: `group` is not a ProcessGroup.
            tarantella.Error: `num_features` or `eps` is not positive.
        """
        _check_group(group, "tnt.nn.SyncBatchNorm")
        _t.check_sync_batchnorm_options(num_features, eps)
        # torch's BatchNorm takes momentum=None (a cumulative average); some
        # torch versions' hints say float.
        super().__init__(num_features, eps, cast(float, momentum), affine, track_running_stats,
                         device=device, dtype=dtype)
        self._tnt_collective = _t.CollectiveLayer(group)

    @property
    def process_group(self) -> Optional[_t.ProcessGroup]:
        """The group it normalizes over; None until given or bound by a tnt.Model."""
        group = self._tnt_collective.group
        return group if group.valid else None

    def set_process_group(self, group: Optional[_t.ProcessGroup]) -> None:
        """Normalizes over `group` from now on.

        Args:
            group: The ranks (a tnt.Model keeps it); None: the model's group.

        Raises:
            TypeError: `group` is not a ProcessGroup or None.
        """
        _check_group(group, "SyncBatchNorm.set_process_group")
        self._tnt_collective.set_group(group if group is not None else _t.ProcessGroup())

    def _check_input_dim(self, input: torch.Tensor) -> None:
        pass  # the C++ core checks, with tnt::nn::SyncBatchNorm's message

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        """Normalizes `input` with the global batch's statistics in training.

        Args:
            input: [N, C] or [N, C, ...]; N may be 0 on a rank.

        Returns:
            The normalized tensor, of input's shape.
        """
        # Momentum and num_batches_tracked as torch's _BatchNorm.forward.
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats and self.num_batches_tracked is not None:
            self.num_batches_tracked.add_(1)
            if self.momentum is None:  # a cumulative average
                factor = 1.0 / float(self.num_batches_tracked)
        use_running = not self.training or self.track_running_stats
        return self._tnt_collective.sync_batch_norm(
            input, self.num_features, self.weight, self.bias,
            self.running_mean if use_running else None,
            self.running_var if use_running else None,
            self.training, factor, self.eps)

    @classmethod
    def convert_sync_batchnorm(cls, module: M, group: Optional[_t.ProcessGroup] = None
                               ) -> M | SyncBatchNorm:
        """tnt.nn.convert_sync_batchnorm(module, group).

        Args:
            module: As there.
            group: As there.

        Returns:
            As there.
        """
        return convert_sync_batchnorm(module, group)


def _from_batchnorm(bn: _BatchNorm, group: Optional[_t.ProcessGroup], name: str
                    ) -> SyncBatchNorm:
    if any(t is not None and torch.nn.parameter.is_lazy(t) for t in (bn.weight, bn.running_mean)):
        raise ValueError(f"convert_sync_batchnorm: '{name or type(bn).__name__}' is a "
                       f"{type(bn).__name__} that has not seen an input yet, so its number of "
                       "features is unknown: run one forward pass before converting, or use "
                       "BatchNorm with num_features")
    sync = SyncBatchNorm(bn.num_features, bn.eps, bn.momentum, bn.affine,
                         bn.track_running_stats, group)
    # The same tensors, not copies: an optimizer built over the old module's
    # parameters keeps working.
    if bn.affine:
        with torch.no_grad():
            sync.weight, sync.bias = bn.weight, bn.bias
    sync.running_mean, sync.running_var = bn.running_mean, bn.running_var
    sync.num_batches_tracked = bn.num_batches_tracked
    if hasattr(bn, "qconfig"):
        sync.qconfig = bn.qconfig
    sync.train(bn.training)
    return sync


def _convert(module: torch.nn.Module, group: Optional[_t.ProcessGroup],
             name: str) -> torch.nn.Module:
    out = module
    if isinstance(module, SyncBatchNorm):
        if group is not None:
            module.set_process_group(group)
    elif isinstance(module, _BatchNorm):
        out = _from_batchnorm(module, group, name)
    for child_name, child in module.named_children():
        out.add_module(child_name, _convert(child, group, f"{name}.{child_name}" if name
                                            else child_name))
    return out


def convert_sync_batchnorm(module: M, group: Optional[_t.ProcessGroup] = None
                           ) -> M | SyncBatchNorm:
    """Replaces every torch BatchNorm layer (BatchNorm1d/2d/3d,
    torch.nn.SyncBatchNorm) in `module`'s tree by a tnt.nn.SyncBatchNorm with
    the same num_features, eps, momentum, affine, track_running_stats,
    training mode, parameters and buffers (the same tensors). Returns the
    module (a new object only when `module` itself is a BatchNorm), as
    torch.nn.SyncBatchNorm.convert_sync_batchnorm does. `group`: see
    SyncBatchNorm; given, it is also set on SyncBatchNorm layers already
    there. Convert before building the optimizer and before
    tnt.Model.compile.

        net = tnt.nn.convert_sync_batchnorm(torchvision.models.resnet18())

    Args:
        module: The network (before it is wrapped in a tnt.Model).
        group: See SyncBatchNorm.

    Returns:
        `module` with its BatchNorm layers replaced; a new SyncBatchNorm when
        `module` itself is a BatchNorm.

    Raises:
        TypeError: `module` is not a torch.nn.Module, or `group` not a ProcessGroup.
        ValueError: A lazy BatchNorm has not seen an input yet.
    """
    if not isinstance(module, torch.nn.Module):
        raise TypeError(f"convert_sync_batchnorm: module must be a torch.nn.Module, got a "
                       f"{type(module).__name__}: pass the network itself (not its output, "
                       "state_dict or a tnt.Model: convert before wrapping it)")
    _check_group(group, "convert_sync_batchnorm")
    out = _convert(module, group, "")
    assert out is module or isinstance(out, SyncBatchNorm)
    return out  # type: ignore[return-value]  # (module itself, or its replacement)
