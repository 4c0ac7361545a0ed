"""tnt.Model: Keras's compile / fit / evaluate / predict for a torch.nn.Module.

    model = tnt.Model(LeNet5())
    model.compile(optimizer=torch.optim.SGD(model.parameters(), lr=0.1),
                  loss=torch.nn.CrossEntropyLoss(), metrics=["accuracy"])
    history = model.fit(train_dataset, batch_size=64, epochs=8)   # GLOBAL batch size
    model.evaluate(test_dataset, batch_size=256)

This class only translates arguments. The loops (epochs, the steps with
their fused, overlapped allreduce, validation, the stop vote, callbacks,
checkpoints, resume) are the C++ training engine's, the same that the C++
tnt::Model drives; they run with the GIL released and call the module's
forward, the loss and Python callbacks under the GIL on this thread.
"""
import torch

from . import _tarantella as _t
from .callbacks import Callback, History
from .metrics import get as _metric

__all__ = ["Model"]

# torch.optim classes and the engine's optimizer of the same update rule.
# The engine steps its own (C++) optimizer on the module's parameters; the
# torch optimizer passed to compile() only says which one, with which
# hyper-parameters.
_SUPPORTED = "SGD, Adam, AdamW, RMSprop and Adagrad"


def _refuse(optimizer, what):
    raise _t.Error(
        f"compile(): {type(optimizer).__name__} with {what} is not supported by tnt.Model; "
        f"use {_SUPPORTED}, or keep your own loop with "
        "tnt.DistributedOptimizer(your_optimizer), which takes any torch optimizer")


def _group_factory(optimizer, g):
    """The engine's optimizer of `optimizer`'s rule with group `g`'s
    hyper-parameters."""
    if g.get("maximize", False):
        _refuse(optimizer, "maximize=True")
    kind = type(optimizer)
    if kind is torch.optim.SGD:
        if g["dampening"] != 0:
            _refuse(optimizer, f"dampening={g['dampening']}")
        return _t.optimizer_sgd(g["lr"], g["momentum"], g["nesterov"], g["weight_decay"])
    if kind is torch.optim.Adam:
        if g["amsgrad"]:
            _refuse(optimizer, "amsgrad=True")
        b1, b2 = g["betas"]
        return _t.optimizer_adam(g["lr"], b1, b2, g["eps"], g["weight_decay"])
    if kind is torch.optim.AdamW:
        if g["amsgrad"]:
            _refuse(optimizer, "amsgrad=True")
        b1, b2 = g["betas"]
        return _t.optimizer_adamw(g["lr"], g["weight_decay"], b1, b2, g["eps"])
    if kind is torch.optim.RMSprop:
        if g["centered"] or g["weight_decay"] != 0:
            _refuse(optimizer, "centered=True or weight_decay")
        return _t.optimizer_rmsprop(g["lr"], g["alpha"], g["momentum"], g["eps"])
    if kind is torch.optim.Adagrad:
        if g["lr_decay"] != 0 or g["weight_decay"] != 0:
            _refuse(optimizer, "lr_decay or weight_decay")
        return _t.optimizer_adagrad(g["lr"], g["initial_accumulator_value"])
    _refuse(optimizer, "this class")


def _from_torch_optimizer(optimizer, module):
    trainable = [p for p in module.parameters() if p.requires_grad]
    position = {id(p): i for i, p in enumerate(trainable)}
    indices = [[position.get(id(p), -1) for p in g["params"]] for g in optimizer.param_groups]
    flat = [i for group in indices for i in group]
    if -1 in flat or sorted(flat) != list(range(len(trainable))):
        raise _t.Error(
            "compile(): the optimizer's parameters are not the model's trainable parameters "
            "(each exactly once): build it over the wrapped module's parameters, e.g. "
            "torch.optim.SGD(module.parameters(), lr=0.1), or over model.parameters(), or "
            "give parameter groups that together hold each trainable parameter once")
    factories = [_group_factory(optimizer, g) for g in optimizer.param_groups]
    if len(factories) == 1:
        return factories[0]  # saved with the model's compile configuration
    return _t.optimizer_grouped(factories, indices)


# Keras's optimizer names with Keras's defaults.
_BY_NAME = {
    "sgd": lambda: _t.optimizer_sgd(0.01, 0.0, False, 0.0),
    "adam": lambda: _t.optimizer_adam(1e-3, 0.9, 0.999, 1e-7, 0.0),
    "adamw": lambda: _t.optimizer_adamw(1e-3, 1e-2, 0.9, 0.999, 1e-7),
    "rmsprop": lambda: _t.optimizer_rmsprop(1e-3, 0.9, 0.0, 1e-7),
    "adagrad": lambda: _t.optimizer_adagrad(1e-3, 0.1),
}


def _optimizer(optimizer, module):
    if isinstance(optimizer, str):
        if optimizer.lower() not in _BY_NAME:
            raise _t.Error(f"compile(): optimizer '{optimizer}' is not known: use one of "
                           f"{', '.join(sorted(_BY_NAME))} or a torch.optim optimizer")
        return _BY_NAME[optimizer.lower()]()
    if isinstance(optimizer, torch.optim.Optimizer):
        return _from_torch_optimizer(optimizer, module)
    raise _t.Error(f"compile(): optimizer must be a torch.optim optimizer or a name such as "
                   f"'sgd', got a {type(optimizer).__name__}")


def _loss(loss):
    if isinstance(loss, str):
        return _t.loss_by_name(loss)
    if callable(loss):
        return _t.loss_from_callable(loss, getattr(loss, "__name__", type(loss).__name__))
    raise _t.Error(f"compile(): loss must be a torch loss module, a callable (y_pred, y_true) "
                   f"-> mean loss, or a Keras name, got a {type(loss).__name__}")


def _samples(x):
    """The number of samples of fit's x, when it has a length (None for a
    tnt.data.Dataset, which is already batched)."""
    if isinstance(x, (tuple, list)) and x and hasattr(x[0], "__len__"):
        return len(x[0])
    if hasattr(x, "__len__") and hasattr(x, "__getitem__") and not isinstance(x, _t.Dataset):
        return len(x)
    return None


class Model:
    """A torch.nn.Module trained data-parallel over a process group (the
    world by default). The batch sizes given to fit/evaluate/predict are
    GLOBAL: each rank computes its share of every batch."""

    def __init__(self, module, group=None):
        self._impl = _t.Model(module, group)
        self.module = module
        self._metric_names = []

    # -- the wrapped module --------------------------------------------
    def __call__(self, *inputs):
        return self.module(*inputs)

    def parameters(self):
        return self.module.parameters()

    def named_parameters(self):
        return self.module.named_parameters()

    # -- compile -------------------------------------------------------
    def compile(self, optimizer="sgd", loss=None, metrics=None, *, num_inputs=1,
                aggregation_frequency=1, deterministic=None, shard_optimizer=False,
                clip_norm=None, clip_value=None, fusion_threshold_bytes=None,
                mixed_precision=None, compression=None):
        """Keras's compile. `optimizer`: a torch.optim optimizer over the
        module's parameters (SGD, Adam, AdamW, RMSprop, Adagrad) or a name;
        `loss`: a torch loss module, a callable or a Keras name; `metrics`:
        names ('accuracy', ...), tnt.metrics.Metric objects, or callables
        (y_pred, y_true) -> per-sample values (their mean). The keyword
        arguments are the C++ CompileOptions (docs/python.md)."""
        if loss is None:
            raise _t.Error("compile() needs a loss, e.g. loss=torch.nn.CrossEntropyLoss()")
        metric_list = [_metric(m) for m in (metrics or [])]
        settings = {"num_inputs": num_inputs, "aggregation_frequency": aggregation_frequency,
                    "shard_optimizer": shard_optimizer}
        optional = {"deterministic": deterministic, "clip_norm": clip_norm,
                    "clip_value": clip_value, "fusion_threshold_bytes": fusion_threshold_bytes,
                    "mixed_precision": mixed_precision, "compression": compression}
        settings.update({k: v for k, v in optional.items() if v is not None})
        self._impl.compile(_optimizer(optimizer, self.module), _loss(loss), metric_list, settings)
        self._metric_names = [m.name for m in metric_list]

    # -- the loops -----------------------------------------------------
    def _dataset(self, x, y, batch_size, shuffle=False):
        # Fewer samples than ranks trains, with idle ranks, but is never what
        # the user meant: every rank says so (the check is the same on all).
        n = _samples(x)
        ranks = self.group.size
        if n is not None and n < ranks:
            raise _t.Error(
                f"the data set has {n} sample(s), fewer than the {ranks} ranks of the model's "
                f"group: give at least {ranks} samples, or run on fewer ranks "
                f"(tarantella -n {max(n, 1)})")
        return _t.Model.dataset(x, y, batch_size, shuffle, _t.default_shuffle_seed())

    def _callbacks(self, callbacks):
        out = []
        for cb in callbacks or []:
            if isinstance(cb, Callback):
                cb.set_model(self)
            out.append(cb)
        return out

    def fit(self, x=None, y=None, batch_size=None, epochs=1, verbose=1, callbacks=None,
            validation_data=None, shuffle=True, initial_epoch=0, steps_per_epoch=None,
            validation_freq=1, validation_batch_size=None, tnt_micro_batch_size=None,
            tnt_validation_micro_batch_size=None, tnt_distribute_dataset=True):
        """Trains for `epochs` epochs on `x` (a map-style torch Dataset, a
        tensor/array or tuple of them with `y`, or a tnt.data.Dataset) with
        the GLOBAL `batch_size` (default 32). `shuffle` reshuffles every
        epoch, the same on every rank (tnt.set_seed sets the seed).
        Returns a History whose .history maps each log to its epoch values."""
        train = self._dataset(x, y, batch_size, shuffle)
        validation = None
        if validation_data is not None:
            vx, vy = (validation_data if isinstance(validation_data, (tuple, list)) and
                      len(validation_data) == 2 else (validation_data, None))
            validation = self._dataset(vx, vy, validation_batch_size or batch_size)
        args = {"epochs": epochs, "initial_epoch": initial_epoch,
                "steps_per_epoch": steps_per_epoch, "validation_freq": validation_freq,
                "verbose": verbose, "micro_batch_size": tnt_micro_batch_size,
                "validation_micro_batch_size": tnt_validation_micro_batch_size,
                "distribute_dataset": tnt_distribute_dataset}
        cbs = self._callbacks(callbacks)
        logs = self._impl.fit(train, args, cbs, validation)
        return History(logs, epochs=list(range(initial_epoch, initial_epoch + len(
            next(iter(logs.values()), [])))), params=args)

    def evaluate(self, x=None, y=None, batch_size=None, verbose=0, callbacks=None,
                 return_dict=False, tnt_micro_batch_size=None, tnt_distribute_dataset=True):
        """Global loss and metrics over the whole data set: the loss alone
        without metrics, else [loss, metrics...] in compile order (a dict
        with return_dict=True)."""
        data = self._dataset(x, y, batch_size)
        args = {"verbose": verbose, "micro_batch_size": tnt_micro_batch_size,
                "distribute_dataset": tnt_distribute_dataset}
        logs = self._impl.evaluate(data, args, self._callbacks(callbacks))
        if return_dict:
            return logs
        if not self._metric_names:
            return logs["loss"]
        return [logs["loss"]] + [logs[name] for name in self._metric_names]

    def predict(self, x, batch_size=None, verbose=0, callbacks=None, tnt_micro_batch_size=None,
                tnt_on_all_ranks=True):
        """The outputs for every sample in data-set order (a tensor on every
        rank; only on the master rank with tnt_on_all_ranks=False, None on
        the others)."""
        data = self._dataset(x, None, batch_size)
        args = {"micro_batch_size": tnt_micro_batch_size, "on_all_ranks": tnt_on_all_ranks}
        return self._impl.predict(data, args, self._callbacks(callbacks))

    # -- state ---------------------------------------------------------
    @property
    def stop_training(self):
        return self._impl.stop_training

    @stop_training.setter
    def stop_training(self, value):
        self._impl.stop_training = bool(value)

    @property
    def learning_rate(self):
        return self._impl.learning_rate

    @learning_rate.setter
    def learning_rate(self, value):
        self._impl.learning_rate = float(value)

    @property
    def group(self):
        return self._impl.group

    @property
    def epochs_done(self):
        return self._impl.epochs_done

    @property
    def loss_scale(self):
        return self._impl.loss_scale

    def get_weights(self):
        """Parameters then buffers, as tensors (copies)."""
        return self._impl.get_weights()

    def set_weights(self, weights):
        """Copies `weights` in, then every rank takes the master's. Collective."""
        self._impl.set_weights(list(weights))

    def save_weights(self, path, tnt_save_all_devices=False):
        """Parameters and buffers in torch.save format (torch.load reads it),
        written by the master rank unless tnt_save_all_devices. Collective."""
        self._impl.save_weights(str(path), tnt_save_all_devices)

    def load_weights(self, path):
        """Reads save_weights' file (or a torch.save'd state_dict), then every
        rank takes the master's. Collective."""
        self._impl.load_weights(str(path))

    def save(self, path, tnt_save_all_devices=False):
        """A checkpoint of the whole training state (weights, optimizer state,
        epochs, steps, random state) in torch.save format. Collective."""
        self._impl.save(str(path), tnt_save_all_devices)

    def load(self, path):
        """Restores save()'s checkpoint into this compiled model; returns the
        completed epochs (pass them as initial_epoch). Collective."""
        return self._impl.load(str(path))

    def summary(self, print_fn=print):
        text = self._impl.summary()
        if text:
            print_fn(text.rstrip("\n"))
