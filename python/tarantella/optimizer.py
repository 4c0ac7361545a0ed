"""tnt.DistributedOptimizer: keep your own training loop.

    optimizer = tnt.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.01),
                                         loader=train_loader)
    for x, y in train_loader:                 # a tnt.data.DataLoader
        optimizer.zero_grad()
        loss_fn(model(x), y).backward()       # gradients leave while backward runs
        optimizer.step()                      # waits for them, then steps

Horovod's design on Tarantella's C++ engine (dp::GradientSynchronizer, the
same as the C++ DistributedOptimizer's), not an allreduce loop in Python:
  * at construction, rank 0's parameters and optimizer state are broadcast
    (collective), after a check that every rank has the same parameters;
  * a C++ autograd hook on each parameter adds its gradient, weighted by this
    rank's share n_r / B of the global batch, into a bucket; a full bucket is
    allreduced at once, in the same order on every rank, while backward
    continues. The share comes from `loader=`, else from the tnt loader
    (tnt.data.DataLoader, DistributedDataset) that handed out the batch last
    (data/_handed_out.py); with a plain torch DataLoader it is unknown, and
    every rank weighs 1 / N (exact only for even shares; a warning says so
    once, at the first step);
  * step() waits for the buckets (the GIL released), so each parameter's
    .grad holds the global batch's gradient, then steps the wrapped
    optimizer; zero_grad(), param_groups (learning rates), state_dict() and
    LR schedulers pass through to it.
"""
from __future__ import annotations

import warnings
import weakref
from typing import Callable, Dict, Iterable, List, Mapping, Optional, Tuple, Union

import torch

from . import _tarantella
from .collectives import broadcast_object
from .data import DataLoader, DistributedDataset, _handed_out

#: What loader= takes: a tnt loader (anything with a BatchShare `share`) or
#: a BatchShare itself.
LoaderLike = Union[DataLoader, DistributedDataset, _tarantella.BatchShare]


class DistributedOptimizer(torch.optim.Optimizer):
    """Wraps a torch optimizer so that each step uses the global batch's gradient.

    Construction and every step are collective over the group: every rank
    must build it over the same parameters and call backward and step() in
    the same order.

    Example:
        optimizer = tnt.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1))
    """

    def __init__(self, optimizer: torch.optim.Optimizer,
                 named_parameters: Optional[Iterable[Tuple[str, torch.Tensor]]] = None,
                 loader: Optional[LoaderLike] = None,
                 group: Optional[_tarantella.ProcessGroup] = None,
                 fusion_threshold_bytes: Optional[int] = None) -> None:
        """Broadcasts rank 0's parameters and optimizer state, and arms the hooks.

        Args:
            optimizer: Any torch.optim optimizer.
            named_parameters: e.g. model.named_parameters(), for error messages
                that name a parameter that differs between ranks.
            loader: The tnt.data.DataLoader or DistributedDataset (or its
                BatchShare) whose batches are trained on. Default: the tnt loader
                that handed out the current batch; with a plain torch loader
                every rank weighs 1 / N (a warning at the first step says so).
            group: The ranks to synchronize over (default: all).
            fusion_threshold_bytes: Size of the gradient buckets
                (default: TNT_FUSION_THRESHOLD, 32 KiB).

        Raises:
            TypeError: `optimizer` is not a torch optimizer, `loader` has no
                share, or `group` is not a ProcessGroup.
            tarantella.Error: The ranks' parameters differ (names, shapes, dtypes).
        """
        # torch.optim.Optimizer.__init__ is not called: the state lives in the
        # wrapped optimizer, reached through the properties below.
        if not isinstance(optimizer, torch.optim.Optimizer):
            raise TypeError(f"DistributedOptimizer: optimizer must be a torch.optim.Optimizer, "
                            f"got {optimizer!r} (a {type(optimizer).__name__})")
        if group is not None and not isinstance(group, _tarantella.ProcessGroup):
            raise TypeError(f"DistributedOptimizer: group must be a tnt.ProcessGroup or None, "
                            f"got {group!r} (a {type(group).__name__})")
        self._optimizer = optimizer
        self._group = group if group is not None else _tarantella.world()
        params = [p for g in optimizer.param_groups for p in g["params"] if p.requires_grad]
        names = _names(optimizer, named_parameters)
        share = _share_of(loader)
        _tarantella.broadcast_parameters(self._group, params, names)
        if self._group.size > 1:
            state = broadcast_object(optimizer.state_dict(), 0, self._group)
            if self._group.rank != 0:
                optimizer.load_state_dict(state)
        self._synchronized = False
        # The last GradScaler that stepped this optimizer, and whether this
        # step's gradients were unscaled before their sum (see step()).
        self._scaler: Optional["weakref.ReferenceType[object]"] = None
        self._unscaled_early = False
        # Without loader=: follow the tnt loaders; until one hands out a
        # batch, 1 / N.
        self._follows = share is None
        self._shares_known = not self._follows
        self._warned = False
        if share is None:
            share = _tarantella.BatchShare()
            share.set(1, self._group.size)
            _handed_out.follow(self)
        self._share = share
        self._sync = _tarantella.GradientSync(self._group, params, share, fusion_threshold_bytes)
        # The parameters frozen when wrapped (they have no hook), by position.
        synced = {id(p) for p in params}
        self._frozen = [(gi, pi, p) for gi, group in enumerate(self._optimizer.param_groups)
                        for pi, p in enumerate(group["params"]) if id(p) not in synced]

    # ---- what torch.optim.Optimizer users and LR schedulers touch ----
    # The properties below override torch.optim.Optimizer's attributes, and
    # step() its overloads, differently per torch version's hints: the
    # ignores are needed on some versions only (pyproject.toml's [tool.mypy]
    # lets them be unused in this module).
    @property
    def param_groups(self) -> List[Dict[str, object]]:  # type: ignore[override]
        """The wrapped optimizer's parameter groups (learning rates live here)."""
        groups: List[Dict[str, object]] = self._optimizer.param_groups
        return groups

    @param_groups.setter
    def param_groups(self, value: List[Dict[str, object]]) -> None:
        self._optimizer.param_groups = value

    @property
    def state(self) -> Mapping[torch.Tensor, Dict[str, object]]:  # type: ignore[override]
        """The wrapped optimizer's state."""
        state: Mapping[torch.Tensor, Dict[str, object]] = self._optimizer.state
        return state

    @property
    def defaults(self) -> Dict[str, object]:  # type: ignore[override]
        """The wrapped optimizer's defaults."""
        defaults: Dict[str, object] = self._optimizer.defaults
        return defaults

    @property
    def optimizer(self) -> torch.optim.Optimizer:
        """The wrapped torch optimizer."""
        return self._optimizer

    def batch_handed_out(self, local: int, global_size: int,
                         group: _tarantella.ProcessGroup) -> None:
        """Takes the share of a batch a tnt loader over this group hands out.

        Called by the tnt loaders (data/_handed_out.py) when this optimizer
        was made without loader=.

        Args:
            local: This rank's samples of the batch.
            global_size: The batch's samples over all ranks.
            group: The loader's group; another group's batches are ignored.
        """
        if group == self._group:
            self._share.set(local, global_size)
            self._shares_known = True

    #: torch's GradScaler.step(optimizer) then calls step(grad_scaler=scaler)
    #: instead of unscaling and checking for inf/NaN itself: it would do so on
    #: this rank's gradients before they are summed, so the update would use
    #: the summed gradients still scaled, and the ranks could disagree on
    #: whether to skip the step (and on the next scale).
    _step_supports_amp_scaling = True

    def step(  # type: ignore[override]
            self, closure: Optional[Callable[[], float]] = None,
            grad_scaler: Optional[object] = None) -> Optional[float]:
        """Waits for the gradients summed over ranks, then steps the wrapped optimizer.

        Under ``scaler.step(optimizer)`` (torch.amp.GradScaler), the summed
        gradients are unscaled and checked for inf/NaN here, after the sum, so
        every rank skips the same steps and keeps the same scale. To clip
        between backward and step: ``optimizer.synchronize()``, then
        ``scaler.unscale_(optimizer)``, clip, ``scaler.step(optimizer)``.

        Args:
            closure: Not supported (it would send the gradients again).
            grad_scaler: Passed by GradScaler.step, not by users.

        Returns:
            What the wrapped optimizer's step returns (None for a skipped step).

        Raises:
            TypeError: A closure was given.
            RuntimeError: ``scaler.unscale_(optimizer)`` was called before
                ``optimizer.synchronize()`` (it unscaled this rank's gradients,
                not the sums). The step is not taken, the sums are complete,
                and the next step starts as usual after ``scaler.update()``.
        """
        if closure is not None:
            raise TypeError(
                "DistributedOptimizer.step() takes no closure: a closure re-runs forward and "
                "backward, which would send the gradients again; call backward() yourself, "
                "then step()")
        if grad_scaler is not None:
            self._scaler = weakref.ref(grad_scaler)
        self._warn_if_shares_unknown()
        try:
            if grad_scaler is not None:
                early = self._unscaled_early or (
                    _scaler_stage(grad_scaler, self) != "READY" and not self._synchronized)
                self.synchronize()  # also when refusing: the ranks' sums complete alike
                if early:
                    raise RuntimeError(
                        "scaler.unscale_(optimizer) was called before the gradients were summed "
                        "over the ranks: it unscaled (and any clipping then changed) this rank's "
                        "gradients, which the sums have replaced, so this step is not taken: "
                        "call optimizer.synchronize() first, then scaler.unscale_(optimizer) "
                        "(to clip), then scaler.step(optimizer)")
                if _scaler_stage(grad_scaler, self) == "READY":
                    grad_scaler.unscale_(self)  # type: ignore[attr-defined]
                found = grad_scaler._per_optimizer_states[id(self)]["found_inf_per_device"]  # type: ignore[attr-defined]
                if sum(v.item() for v in found.values()):
                    return None  # inf/NaN in the sums: every rank skips
            self.synchronize()
            loss: Optional[float] = self._optimizer.step()
            return loss
        finally:
            self._synchronized = False
            self._unscaled_early = False
            self._sync.arm()

    def _warn_if_shares_unknown(self) -> None:
        if self._shares_known or self._warned or self._group.size == 1:
            return
        self._warned = True
        warnings.warn(
            f"tnt.DistributedOptimizer: no tnt.data loader handed out this step's batch, so "
            f"each rank's gradient weighs 1/{self._group.size}; that is exact only when every "
            f"rank has as many samples in every batch. Iterate a tnt.data.DataLoader (it tells "
            f"the optimizer each rank's share), or pass loader= to be exact with uneven "
            f"batches", UserWarning, stacklevel=3)

    def synchronize(self) -> None:
        """Waits for this step's gradients.

        Afterwards each .grad holds the global batch's gradient (step() calls
        it; call it yourself to clip gradients between backward and step). To
        skip the step after looking at them (a norm that is not finite), call
        zero_grad() instead of step(), on every rank alike.
        """
        if not self._synchronized:
            # The scaler of earlier steps (GradScaler keeps one per loop)
            # already unscaled this rank's gradients: the sums will replace
            # them still scaled, and step() refuses them. A first step's
            # scaler is not known yet (docs/python.md).
            scaler = self._scaler() if self._scaler is not None else None
            if scaler is not None and id(self) in getattr(scaler, "_per_optimizer_states", {}) \
                    and _scaler_stage(scaler, self) != "READY":
                self._unscaled_early = True
            self._sync.finish()
            self._synchronized = True
            self._check_nothing_unfrozen()

    def _check_nothing_unfrozen(self) -> None:
        # A parameter frozen when the optimizer was wrapped has no hook: its
        # gradient would be this rank's alone, and the ranks would drift apart.
        for gi, pi, p in self._frozen:
            if p.requires_grad and p.grad is not None:
                raise _tarantella.Error(
                    f"DistributedOptimizer: param_groups[{gi}].params[{pi}] has a gradient, "
                    f"but it did not require one when the optimizer was wrapped, so its "
                    f"gradient is not summed over the ranks (they would drift apart): wrap "
                    f"the optimizer after unfreezing it, or wrap it again now (and drop this "
                    f"one, with the LR schedulers made for it)")

    def zero_grad(self, set_to_none: bool = False) -> None:
        """Drops every gradient since the last step, as the wrapped optimizer's zero_grad.

        Also those of a backward that is not to count (a GAN's generator
        loss through the discriminator, a gradient penalty): the buckets
        that carry the gradients to the other ranks start afresh (a
        ``module.zero_grad()`` alone leaves them), and follow a model moved
        to another device after wrapping. Every rank must call it where the
        others do (buckets already sent are waited for).

        Args:
            set_to_none: Accepted for torch's signature; between steps .grad
                is None either way (the hooks take autograd's fresh gradient).
        """
        self._optimizer.zero_grad(set_to_none)
        if self._synchronized:
            # synchronize() ended this step's cycle and no step() follows (a
            # step skipped after looking at the sums): the next cycle starts
            # here, as after a step, or the next gradients stay this rank's.
            self._synchronized = False
            self._unscaled_early = False
            self._sync.arm()
        else:
            self._sync.discard()

    def state_dict(self) -> Dict[str, object]:
        """The wrapped optimizer's state_dict.

        Returns:
            Its state and parameter groups.
        """
        state: Dict[str, object] = self._optimizer.state_dict()
        return state

    def load_state_dict(self, state_dict: Dict[str, object]) -> None:
        """Loads into the wrapped optimizer (the same on every rank, or broadcast it first).

        Args:
            state_dict: As state_dict() returns it.
        """
        self._optimizer.load_state_dict(state_dict)

    def add_param_group(self, param_group: Dict[str, object]) -> None:
        """Not supported: the gradient buckets are formed at construction.

        Args:
            param_group: Ignored.

        Raises:
            tarantella.Error: Always.
        """
        raise _tarantella.Error(
            "DistributedOptimizer.add_param_group() is not supported: the gradient buckets are "
            "formed at construction; add the group to the torch optimizer before wrapping it")

    def __getstate__(self) -> Dict[str, object]:
        raise TypeError("a DistributedOptimizer cannot be pickled: save state_dict() instead")

    def __repr__(self) -> str:
        return f"DistributedOptimizer({self._optimizer!r}, group={self._group!r})"


def _share_of(loader: Optional[LoaderLike]) -> Optional[_tarantella.BatchShare]:
    if loader is None:
        return None
    if isinstance(loader, _tarantella.BatchShare):
        return loader
    share = getattr(loader, "share", None)
    if not isinstance(share, _tarantella.BatchShare):
        raise TypeError(f"DistributedOptimizer: loader= must be a tnt.data.DataLoader or "
                        f"tnt.data.DistributedDataset (it tells each rank's share of a batch); "
                        f"got a {type(loader).__name__}")
    return share


def _scaler_stage(scaler: object, optimizer: object) -> str:
    """GradScaler's stage for `optimizer`: READY, UNSCALED or STEPPED."""
    states = getattr(scaler, "_per_optimizer_states")
    return str(states[id(optimizer)]["stage"].name)


def _names(optimizer: torch.optim.Optimizer,
           named_parameters: Optional[Iterable[Tuple[str, torch.Tensor]]]) -> List[str]:
    by_id: Dict[int, str] = {}
    if named_parameters is not None:
        by_id = {id(p): name for name, p in named_parameters}
    names: List[str] = []
    for gi, group in enumerate(optimizer.param_groups):
        for pi, p in enumerate(group["params"]):
            if p.requires_grad:
                names.append(by_id.get(id(p), f"param_groups[{gi}].params[{pi}]"))
    return names
