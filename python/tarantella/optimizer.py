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
    rank's share n_r / B of the global batch (read from the loader; without a
    loader 1 / N, exact only when every rank has as many samples), into a
    bucket; a full bucket is allreduced at once, in the same order on every
    rank, while backward continues;
  * step() waits for the buckets (the GIL released), so each parameter's
    .grad holds the global batch's gradient, then steps the wrapped
    optimizer; zero_grad(), param_groups (learning rates), state_dict() and
    LR schedulers pass through to it.
"""
import torch

from . import _tarantella
from .collectives import broadcast_object


class DistributedOptimizer(torch.optim.Optimizer):
    """DistributedOptimizer(optimizer, named_parameters=None, loader=None, group=None,
    fusion_threshold_bytes=None)

    `loader`: a tnt.data.DataLoader or tnt.data.DistributedDataset (anything with a
    `share`, or a tnt.data.BatchShare). `named_parameters`: e.g.
    model.named_parameters(), for error messages that name a parameter that differs
    between ranks. `group`: the ranks to synchronize over (default: all).
    """

    def __init__(self, optimizer, named_parameters=None, loader=None, group=None,
                 fusion_threshold_bytes=None):
        # torch.optim.Optimizer.__init__ is not called: the state lives in the
        # wrapped optimizer, reached through the properties below.
        if not isinstance(optimizer, torch.optim.Optimizer):
            raise TypeError(f"DistributedOptimizer wraps a torch.optim.Optimizer, got a "
                            f"{type(optimizer).__name__}")
        self._optimizer = optimizer
        self._group = group if group is not None else _tarantella.world()
        params = [p for g in optimizer.param_groups for p in g["params"] if p.requires_grad]
        names = _names(optimizer, params, named_parameters)
        _tarantella.broadcast_parameters(self._group, params, names)
        if self._group.size > 1:
            state = broadcast_object(optimizer.state_dict(), 0, self._group)
            if self._group.rank != 0:
                optimizer.load_state_dict(state)
        self._synchronized = False
        self._sync = _tarantella.GradientSync(self._group, params, _share_of(loader),
                                              fusion_threshold_bytes)

    # ---- what torch.optim.Optimizer users and LR schedulers touch ----
    @property
    def param_groups(self):
        return self._optimizer.param_groups

    @param_groups.setter
    def param_groups(self, value):
        self._optimizer.param_groups = value

    @property
    def state(self):
        return self._optimizer.state

    @property
    def defaults(self):
        return self._optimizer.defaults

    @property
    def optimizer(self):
        """The wrapped torch optimizer."""
        return self._optimizer

    def step(self, closure=None):
        """Waits for the gradients summed over ranks, then steps the wrapped optimizer."""
        if closure is not None:
            raise _tarantella.Error(
                "DistributedOptimizer.step() takes no closure: a closure re-runs forward and "
                "backward, which would send the gradients again; call backward() yourself, "
                "then step()")
        self.synchronize()
        try:
            return self._optimizer.step()
        finally:
            self._synchronized = False
            self._sync.arm()

    def synchronize(self):
        """Waits for this step's gradients: afterwards each .grad holds the global
        batch's gradient (step() calls it; call it yourself to clip gradients
        between backward and step)."""
        if not self._synchronized:
            self._sync.finish()
            self._synchronized = True

    def zero_grad(self, set_to_none=False):
        self._optimizer.zero_grad(set_to_none)

    def state_dict(self):
        return self._optimizer.state_dict()

    def load_state_dict(self, state_dict):
        self._optimizer.load_state_dict(state_dict)

    def add_param_group(self, param_group):
        raise _tarantella.Error(
            "DistributedOptimizer.add_param_group() is not supported: the gradient buckets are "
            "formed at construction; add the group to the torch optimizer before wrapping it")

    def __getstate__(self):
        raise TypeError("a DistributedOptimizer cannot be pickled: save state_dict() instead")

    def __repr__(self):
        return f"DistributedOptimizer({self._optimizer!r}, group={self._group!r})"


def _share_of(loader):
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


def _names(optimizer, params, named_parameters):
    by_id = {}
    if named_parameters is not None:
        by_id = {id(p): name for name, p in named_parameters}
    names, k = [], 0
    for gi, group in enumerate(optimizer.param_groups):
        for pi, p in enumerate(group["params"]):
            if p.requires_grad:
                names.append(by_id.get(id(p), f"param_groups[{gi}].params[{pi}]"))
                k += 1
    return names
