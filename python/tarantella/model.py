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
from __future__ import annotations

import os
import warnings
import weakref
from typing import Any, Callable, Dict, Iterable, Iterator, List, Literal, Mapping, Optional
from typing import NamedTuple, Sequence, Tuple, Union, overload

import torch

from . import _tarantella as _t
from ._args import check_bool, check_int, check_number, check_optional_int, check_str
from .callbacks import Callback, History
from .metrics import MetricLike
from .metrics import get as _metric

__all__ = ["Model", "LossLike", "OptimizerLike", "CallbackLike"]

#: What compile() takes as `loss`: a Keras name, a torch loss module, or a
#: callable (y_pred, y_true) -> mean loss.
LossLike = Union[str, torch.nn.Module, Callable[[torch.Tensor, torch.Tensor], torch.Tensor]]
#: What compile() takes as `optimizer`: a Keras name or a torch.optim optimizer.
OptimizerLike = Union[str, torch.optim.Optimizer]
#: A callback: a tnt.callbacks.Callback subclass or a built-in (C++) one.
CallbackLike = Union[Callback, _t.CppCallback]
PathLike = Union[str, "os.PathLike[str]"]

# torch.optim classes and the engine's optimizer of the same update rule.
# The engine steps its own (C++) optimizer on the module's parameters; the
# torch optimizer passed to compile() only says which one, with which
# hyper-parameters. They cross as keyword arguments named as the C++
# options struct's fields (src/python/options.h); a name ('adam') goes to
# the C++ Keras registry, so every default is C++'s.
_SUPPORTED = "SGD, Adam, AdamW, RMSprop and Adagrad"


def _autocast_on() -> bool:
    """Whether the caller runs inside torch.autocast (GPU or CPU)."""
    enabled: Any = torch.is_autocast_enabled  # a device argument from torch 2.4 on
    try:
        return bool(enabled() or enabled("cpu"))
    except TypeError:  # torch before 2.4
        return bool(enabled() or torch.is_autocast_cpu_enabled())


def _unsupported(optimizer: torch.optim.Optimizer, what: str) -> ValueError:
    return ValueError(
        f"compile(): optimizer={type(optimizer).__name__} with {what} is not supported by "
        f"tnt.Model; use {_SUPPORTED}, or keep your own loop with "
        "tnt.DistributedOptimizer(your_optimizer), which takes any torch optimizer")


def _number(g: Mapping[str, object], key: str) -> float:
    value = g[key]
    if isinstance(value, torch.Tensor):  # torch allows a tensor learning rate
        return float(value.item())
    return check_number("compile()", f"the optimizer's {key}", value)


def _flag(g: Mapping[str, object], key: str) -> bool:
    return bool(g.get(key, False))


def _betas(g: Mapping[str, object]) -> Tuple[float, float]:
    betas = g["betas"]
    if not isinstance(betas, (tuple, list)) or len(betas) != 2:
        raise TypeError(f"compile(): the optimizer's betas must be a pair, got {betas!r}")
    return (check_number("compile()", "betas[0]", betas[0]),
            check_number("compile()", "betas[1]", betas[1]))


def _group_factory(optimizer: torch.optim.Optimizer,
                   g: Mapping[str, object]) -> _t.OptimizerFactory:
    """The engine's optimizer of `optimizer`'s rule with group `g`'s
    hyper-parameters."""
    if _flag(g, "maximize"):
        raise _unsupported(optimizer, "maximize=True")
    kind = type(optimizer)
    lr = _number(g, "lr")
    if kind is torch.optim.SGD:
        if _number(g, "dampening") != 0:
            raise _unsupported(optimizer, f"dampening={g['dampening']}")
        return _t.optimizer_sgd(learning_rate=lr, momentum=_number(g, "momentum"),
                                nesterov=_flag(g, "nesterov"),
                                weight_decay=_number(g, "weight_decay"))
    if kind is torch.optim.Adam or kind is torch.optim.AdamW:
        if _flag(g, "amsgrad"):
            raise _unsupported(optimizer, "amsgrad=True")
        b1, b2 = _betas(g)
        eps, decay = _number(g, "eps"), _number(g, "weight_decay")
        if kind is torch.optim.Adam:
            return _t.optimizer_adam(learning_rate=lr, beta_1=b1, beta_2=b2, epsilon=eps,
                                     weight_decay=decay)
        return _t.optimizer_adamw(learning_rate=lr, beta_1=b1, beta_2=b2, epsilon=eps,
                                  weight_decay=decay)
    if kind is torch.optim.RMSprop:
        if _flag(g, "centered") or _number(g, "weight_decay") != 0:
            raise _unsupported(optimizer, "centered=True or weight_decay")
        return _t.optimizer_rmsprop(learning_rate=lr, rho=_number(g, "alpha"),
                                    momentum=_number(g, "momentum"), epsilon=_number(g, "eps"))
    if kind is torch.optim.Adagrad:
        if _number(g, "lr_decay") != 0 or _number(g, "weight_decay") != 0:
            raise _unsupported(optimizer, "lr_decay or weight_decay")
        if _number(g, "eps") != 1e-10:  # the engine's Adagrad has torch's default
            raise _unsupported(optimizer, f"eps={g['eps']}")
        return _t.optimizer_adagrad(
            learning_rate=lr,
            initial_accumulator_value=_number(g, "initial_accumulator_value"))
    raise _unsupported(optimizer, "this class")


def _params_of(g: Mapping[str, object]) -> List[torch.Tensor]:
    params = g["params"]
    assert isinstance(params, list)  # torch.optim makes it a list
    return [p for p in params if isinstance(p, torch.Tensor)]


def _from_torch_optimizer(optimizer: torch.optim.Optimizer, module: torch.nn.Module,
                          whole: torch.nn.Module) -> _t.OptimizerFactory:
    """`module`: what this rank trains; `whole`: the module wrapped. With
    pipeline stages they differ, and this rank keeps the part of the
    optimizer over its stage's parameters."""
    trainable = [p for p in module.parameters() if p.requires_grad]
    position = {id(p): i for i, p in enumerate(trainable)}
    elsewhere = {id(p) for p in whole.parameters()} - set(position)  # other stages'
    groups = [g for g in optimizer.param_groups
              if any(id(p) not in elsewhere for p in _params_of(g))]
    indices = [[position.get(id(p), -1) for p in _params_of(g) if id(p) not in elsewhere]
               for g in groups]
    flat = [i for group in indices for i in group]
    if -1 in flat or sorted(flat) != list(range(len(trainable))):
        raise ValueError(
            "compile(): the optimizer's parameters are not the model's trainable parameters "
            "(each exactly once): build it over the wrapped module's parameters, e.g. "
            "torch.optim.SGD(module.parameters(), lr=0.1), or over model.parameters(), or "
            "give parameter groups that together hold each trainable parameter once")
    factories = [_group_factory(optimizer, g) for g in groups]
    if len(factories) == 1:
        return factories[0]  # saved with the model's compile configuration
    return _t.optimizer_grouped(factories, indices)


def _optimizer(optimizer: object, module: torch.nn.Module,
               whole: torch.nn.Module) -> _t.OptimizerFactory:
    if isinstance(optimizer, str):
        # Keras's names and the class names, with the C++ defaults; an
        # unknown name: ValueError listing the known ones.
        return _t.optimizer_by_name(optimizer)
    if isinstance(optimizer, torch.optim.Optimizer):
        return _from_torch_optimizer(optimizer, module, whole)
    raise TypeError(f"compile(): optimizer must be a torch.optim optimizer or a name such as "
                    f"'sgd', got {optimizer!r} (a {type(optimizer).__name__})")


def _loss(loss: object) -> _t.Loss:
    if isinstance(loss, str):
        return _t.loss_by_name(loss)  # the C++ registry; unknown: ValueError listing its names
    reduction = getattr(loss, "reduction", "mean")
    # 'batchmean' (KLDivLoss's true divergence) is a mean over samples too.
    if isinstance(loss, torch.nn.modules.loss._Loss) and reduction not in ("mean", "batchmean"):
        # The engine weights each rank's mean by its share of the global
        # batch: a sum would train 1/N as fast at N ranks, 'none' fail.
        raise ValueError(
            f"compile(): loss={loss!r} has reduction={reduction!r}, but the loss must be the "
            f"mean over the batch's samples (the engine weights each rank's mean by its share "
            f"of the global batch, so that any rank count trains alike): use "
            f"{type(loss).__name__}(reduction='mean'), the default")
    if callable(loss):
        # Where its binary predictions decide, for 'accuracy' of one output.
        threshold = (0.0 if isinstance(loss, torch.nn.BCEWithLogitsLoss) else
                     0.5 if isinstance(loss, torch.nn.BCELoss) else None)
        return _t.loss_from_callable(loss, getattr(loss, "__name__", type(loss).__name__),
                                     threshold)
    raise TypeError(f"compile(): loss must be a torch loss module, a callable (y_pred, y_true) "
                    f"-> mean loss, or a Keras name, got {loss!r} (a {type(loss).__name__})")


def _metrics(metrics: object) -> List[_t.Metric]:
    if metrics is None:
        return []
    if isinstance(metrics, (str, _t.Metric)) or not isinstance(metrics, (list, tuple)):
        raise TypeError(f"compile(): metrics must be a list, e.g. metrics=['accuracy'], got "
                        f"{metrics!r} (a {type(metrics).__name__})")
    return [_metric(m) for m in metrics]


def _samples(x: object) -> Optional[int]:
    """The number of samples of fit's x, when it has a length (None for a
    tnt.data.Dataset, which is already batched)."""
    if isinstance(x, (tuple, list)) and x and hasattr(x[0], "__len__"):
        return len(x[0])
    if hasattr(x, "__len__") and hasattr(x, "__getitem__") and not isinstance(x, _t.Dataset):
        return len(x)
    return None


class PipelinePosition(NamedTuple):
    """Where a rank sits in a pipelined tnt.Model (Model.pipeline)."""

    stage: int
    stages: int
    replica: int
    replicas: int


class Model:
    """A torch.nn.Module trained data-parallel over a process group.

    The batch sizes given to fit/evaluate/predict are GLOBAL: each rank
    computes its share of every batch. Every method that trains, evaluates,
    predicts, saves or loads is collective: every rank of the group must call
    it, with the same arguments.

    Attributes:
        module: The wrapped torch.nn.Module (its parameters are trained in place).
    """

    def __init__(self, module: torch.nn.Module, group: Optional[_t.ProcessGroup] = None, *,
                 pipeline_stages: int = 1, micro_batches: Optional[int] = None,
                 schedule: str = "1f1b") -> None:
        """Wraps `module`.

        Args:
            module: Any torch.nn.Module; with pipeline_stages > 1, a torch.nn.Sequential.
            group: The ranks to train over (default: every rank, tnt.world()).
            pipeline_stages: P: the Sequential is cut into P stages over the ranks
                (at its tnt.nn.SplitPoints, else by parameter count), and the group's N
                ranks run N / P replicas of the pipeline (docs/guide/pipelining.md).
            micro_batches: M: micro-batches per replica and global batch (default
                4 * (P - 1), at least 1).
            schedule: "1f1b" (the default: a stage holds at most P micro-batches'
                activations) or "gpipe".

        Raises:
            TypeError: `module` is not a torch.nn.Module (a Sequential with stages), or
                `group` not a ProcessGroup, or a count not an int.
            ValueError: the ranks are not a multiple of the stages, the SplitPoints do
                not make P stages, or a count or the schedule is out of range.
        """
        if group is not None and not isinstance(group, _t.ProcessGroup):
            raise TypeError(f"tnt.Model: group must be a tnt.ProcessGroup or None, got "
                            f"{group!r} (a {type(group).__name__})")
        stages = check_int("tnt.Model", "pipeline_stages", pipeline_stages)
        micro = check_optional_int("tnt.Model", "micro_batches", micro_batches)
        for name, value in (("pipeline_stages", stages), ("micro_batches", micro)):
            if value is not None and value < 1:
                raise ValueError(f"tnt.Model: {name}={value}: it must be at least 1")
        self._impl = _t.Model(module, group, stages, micro,
                              check_str("tnt.Model", "schedule", schedule))
        self.module = module
        self._metric_names: List[str] = []
        self._num_inputs: Optional[int] = None  # compile()'s
        self._torch_rates: Optional[Tuple[Any, List[object]]] = None

    @property
    def pipeline(self) -> Optional[PipelinePosition]:
        """Where this rank sits in a pipelined model, or None without stages.

        Returns:
            (stage, stages, replica, replicas), e.g. PipelinePosition(stage=1, stages=2,
            replica=0, replicas=2) on rank 1 of 4 with pipeline_stages=2.
        """
        position = self._impl.pipeline
        return None if position is None else PipelinePosition(*position)

    @property
    def device(self) -> torch.device:
        """The device this rank trains on (a GPU of its own where there is one, else the CPU).

        Returns:
            The torch.device of the model's parameters after wrapping.
        """
        return torch.device(self._impl.device)

    @property
    def stage_module(self) -> torch.nn.Module:
        """What this rank trains: the wrapped module, or with pipeline stages a
        torch.nn.Sequential of this rank's stage's layers (the same layer objects as in
        `module`, under their names there; the other stages' tensors are freed).

        A model too large for one rank is built on the meta device, wrapped, and then
        materialised here only: ``model.stage_module.to_empty(device=model.device)``,
        then initialised (docs/guide/pipelining.md).

        Returns:
            The module this rank trains.
        """
        stage: torch.nn.Module = self._impl.trained_module
        return stage

    # -- the wrapped module --------------------------------------------
    def __call__(self, *inputs: torch.Tensor) -> torch.Tensor:
        """Runs the wrapped module's forward on this rank (no communication),
        as ``tnt::Model::forward`` does in C++: the inputs are moved to the
        model's device (``model.device``), and the compiled mixed precision
        applies (a float32 output then).

        The module must return one tensor, as for ``fit``; for a module with
        other inputs or outputs, call ``model.module(...)`` yourself with
        inputs on ``model.device``.

        Args:
            *inputs: The module's inputs (tensors, on any device).

        Returns:
            The module's output, on the model's device.

        Raises:
            TypeError: An input is not a tensor.
            ValueError: The model is cut into pipeline stages (this rank holds
                one stage only): use ``predict``.
        """
        if self._impl.pipeline is not None:
            raise ValueError("model(...) runs the whole module on this rank, but this model is "
                             "cut into pipeline stages and this rank holds one of them: use "
                             "model.predict(x), which runs every stage")
        for i, t in enumerate(inputs):
            if not isinstance(t, torch.Tensor):
                raise TypeError(f"model(...): input {i} is a {type(t).__name__}, not a "
                                "torch.Tensor: pass tensors (call model.module(...) for "
                                "other inputs)")
        out: torch.Tensor = self._impl.forward(list(inputs))
        return out

    def parameters(self) -> Iterator[torch.nn.Parameter]:
        """The wrapped module's parameters, e.g. to build a torch optimizer.

        Returns:
            An iterator over the parameters.
        """
        return self.module.parameters()

    def named_parameters(self) -> Iterator[Tuple[str, torch.nn.Parameter]]:
        """The wrapped module's named parameters.

        Returns:
            An iterator over (name, parameter) pairs.
        """
        return self.module.named_parameters()

    # -- compile -------------------------------------------------------
    def compile(self, optimizer: OptimizerLike = "sgd", loss: Optional[LossLike] = None,
                metrics: Optional[Sequence[MetricLike]] = None, *,
                num_inputs: Optional[int] = None, aggregation_frequency: Optional[int] = None,
                deterministic: Optional[int] = None, shard_optimizer: Optional[bool] = None,
                clip_norm: Optional[float] = None,
                clip_value: Optional[float] = None,
                fusion_threshold_bytes: Optional[int] = None,
                mixed_precision: Optional[str] = None,
                compression: Optional[str] = None) -> None:
        """Keras's compile: the optimizer, the loss, the metrics and the engine's settings.

        A setting left None keeps the C++ CompileOptions' default.

        Args:
            optimizer: A torch.optim optimizer over the module's parameters (SGD,
                Adam, AdamW, RMSprop, Adagrad; parameter groups are kept) or a
                Keras name ('sgd', 'adam', 'adamw', 'rmsprop', 'adagrad').
            loss: A torch loss module, a callable (y_pred, y_true) -> mean loss,
                or a Keras name ('sparse_categorical_crossentropy', 'mse', ...).
            metrics: Names ('accuracy', ...), tnt.metrics.Metric objects, or
                callables (y_pred, y_true) -> per-sample values (their mean).
            num_inputs: How many leading tensors of an element go to forward.
            aggregation_frequency: Steps whose gradients are accumulated per update.
            deterministic: Chunk size for bitwise-reproducible sums at any rank count.
            shard_optimizer: Shards the optimizer state over the ranks (ZeRO-1).
            clip_norm: Clips the global gradient norm to this value.
            clip_value: Clips each gradient element to [-clip_value, clip_value].
            fusion_threshold_bytes: Size of the gradient buckets.
            mixed_precision: 'bfloat16' or 'float16' autocast of the forward pass.
            compression: 'float16' or 'bfloat16' gradients on the wire.

        Raises:
            TypeError: An argument of the wrong type (an optimizer that is not a
                torch optimizer or name, a missing loss, a metric that is not a
                name, Metric or callable).
            ValueError: An unknown name (optimizer, loss, metric, mixed_precision,
                compression) or an optimizer setting the engine does not have.
        """
        if loss is None:
            raise TypeError("compile() needs a loss, e.g. loss=torch.nn.CrossEntropyLoss() or "
                            "loss='sparse_categorical_crossentropy'")
        where = "compile()"
        # Optional in the struct too: None is the struct's own default.
        options = _t.CompileOptions(
            deterministic=check_optional_int(where, "deterministic", deterministic),
            clip_norm=None if clip_norm is None else check_number(where, "clip_norm", clip_norm),
            clip_value=None if clip_value is None else check_number(where, "clip_value",
                                                                    clip_value),
            fusion_threshold_bytes=check_optional_int(where, "fusion_threshold_bytes",
                                                      fusion_threshold_bytes))
        # The others: a setting left None keeps the struct's default.
        if num_inputs is not None:
            options.num_inputs = check_int(where, "num_inputs", num_inputs)
        if aggregation_frequency is not None:
            options.aggregation_frequency = check_int(where, "aggregation_frequency",
                                                      aggregation_frequency)
        if shard_optimizer is not None:
            options.shard_optimizer = check_bool(where, "shard_optimizer", shard_optimizer)
        if mixed_precision is not None:  # an unknown name: ValueError from the C++ parser
            options.mixed_precision = check_str(where, "mixed_precision", mixed_precision)
        if compression is not None:
            options.compression = check_str(where, "compression", compression)
        metric_list = _metrics(metrics)
        self._impl.compile(_optimizer(optimizer, self._impl.trained_module, self.module),
                           _loss(loss), metric_list, options)
        self._metric_names = [m.name for m in metric_list]
        self._num_inputs = int(options.num_inputs)
        # The torch optimizer's rates as compiled: the engine steps its own
        # optimizer, so a torch lr_scheduler on this one changes nothing.
        self._torch_rates = ((weakref.ref(optimizer), [g["lr"] for g in optimizer.param_groups])
                             if isinstance(optimizer, torch.optim.Optimizer) else None)

    def _warn_if_torch_rates_changed(self) -> None:
        if self._torch_rates is None:
            return
        optimizer, rates = self._torch_rates[0](), self._torch_rates[1]
        if optimizer is None or [g["lr"] for g in optimizer.param_groups] == rates:
            return
        self._torch_rates = None  # once
        warnings.warn(
            "fit(): the learning rate of the torch optimizer given to compile() changed since "
            "(a torch.optim.lr_scheduler on it?), but the engine steps an optimizer of its own "
            "built at compile(), which does not see it: set model.learning_rate, or use "
            "tnt.callbacks.LearningRateScheduler (Keras's way)", UserWarning, stacklevel=3)

    # -- the loops -----------------------------------------------------
    def _data(self, x: object, y: object, batch_size: Optional[int],
              shuffle: bool = False, where: str = "fit()",
              ) -> Tuple[object, object, Optional[int], bool]:
        # The data as given, with the GLOBAL batch size: the extension makes
        # the Dataset in the call that uses it, so the size crosses once.
        # Fewer samples than ranks trains, with idle ranks, but is never what
        # the user meant: every rank says so (the check is the same on all).
        if y is not None and isinstance(x, (tuple, list)) and self._num_inputs is not None \
                and len(x) != self._num_inputs:
            # As for a Keras model of several inputs; forward would get the
            # first num_inputs, the next one be taken as the target, y dropped.
            raise ValueError(
                f"{where}: x is a {type(x).__name__} of {len(x)} inputs beside y, but the model "
                f"was compiled with num_inputs={self._num_inputs}: compile(..., "
                f"num_inputs={len(x)}) so that forward gets all {len(x)}, or give x as one "
                f"tensor")
        x, y = self._floating_arrays(x), self._floating_arrays(y)
        n = _samples(x)
        ranks = self.group.size
        if n is not None and n < ranks:
            raise _t.Error(
                f"the data set has {n} sample(s), fewer than the {ranks} ranks of the model's "
                f"group: give at least {ranks} samples, or run on fewer ranks "
                f"(tarantella -n {max(n, 1)})")
        return (x, y, batch_size, shuffle)

    def _floating_arrays(self, value: object) -> object:
        # numpy's floating arrays are float64 by default, the module's
        # parameters float32: such arrays take the parameters' dtype, as
        # Keras casts them to floatx (a tensor is taken as it is given).
        if isinstance(value, (tuple, list)):  # components, or a list of samples
            items = [self._floating_arrays(v) for v in value]
            if all(a is b for a, b in zip(items, value)):
                return value  # nothing cast: the container as it is
            if hasattr(value, "_fields"):  # a namedtuple
                return type(value)(*items)  # type: ignore[arg-type]
            return tuple(items) if isinstance(value, tuple) else items
        if type(value).__module__ != "numpy" or \
                getattr(getattr(value, "dtype", None), "kind", "") != "f":
            return value
        dtype = next((p.dtype for p in self.module.parameters() if p.is_floating_point()),
                     torch.get_default_dtype())
        return torch.as_tensor(value, dtype=dtype)

    def _callbacks(self, where: str,
                   callbacks: Optional[Sequence[CallbackLike]]) -> List[CallbackLike]:
        if callbacks is None:
            return []
        if not isinstance(callbacks, (list, tuple)):
            raise TypeError(f"{where}: callbacks must be a list of callbacks, got "
                            f"{callbacks!r} (a {type(callbacks).__name__})")
        out: List[CallbackLike] = []
        for i, cb in enumerate(callbacks):
            if isinstance(cb, Callback):
                cb.set_model(self)
            elif not isinstance(cb, _t.CppCallback):
                raise TypeError(
                    f"{where}: callbacks[{i}] is {cb!r} (a {type(cb).__name__}), not a callback: "
                    "pass tnt.callbacks objects (ModelCheckpoint(...), ...) or instances of a "
                    "tnt.callbacks.Callback subclass")
            out.append(cb)
        return out

    def fit(self, x: object = None, y: object = None, batch_size: Optional[int] = None,
            epochs: int = 1, verbose: int = 1,
            callbacks: Optional[Sequence[CallbackLike]] = None,
            validation_data: object = None, shuffle: bool = True, initial_epoch: int = 0,
            steps_per_epoch: Optional[int] = None, validation_freq: int = 1,
            validation_batch_size: Optional[int] = None,
            tnt_micro_batch_size: Optional[int] = None,
            tnt_validation_micro_batch_size: Optional[int] = None,
            tnt_distribute_dataset: bool = True,
            validation_steps: Optional[int] = None) -> History:
        """Trains the module, as Keras's fit. Collective.

        Args:
            x: A map-style torch Dataset, a tensor or numpy array or a
                tuple/list of them (with `y`), or a batched tnt.data.Dataset.
            y: The targets when `x` is tensors; else None.
            batch_size: The GLOBAL batch size (default 32; None for a tnt.data.Dataset).
            epochs: The index of the last epoch plus one, as in Keras.
            verbose: 0 silent, 1 progress bar, 2 one line per epoch.
            callbacks: tnt.callbacks objects and Callback subclasses' instances.
            validation_data: (x, y), or a dataset, evaluated after each epoch.
            shuffle: Reshuffles every epoch, the same on every rank (tnt.set_seed
                sets the seed).
            initial_epoch: The epoch to start at (after load()).
            steps_per_epoch: Caps the steps of an epoch.
            validation_freq: Validate every this many epochs.
            validation_batch_size: The validation's GLOBAL batch size
                (default: batch_size).
            tnt_micro_batch_size: Checks that each rank's share is this large.
            tnt_validation_micro_batch_size: The same for validation.
            tnt_distribute_dataset: False: each rank reads the whole dataset as its own.
            validation_steps: Each validation evaluates only the first this many
                batches of validation_data (None or 0: all of them).

        Returns:
            A History whose .history maps each log ('loss', metric names,
            'val_...', 'lr' with a learning-rate callback) to its value per epoch.

        Raises:
            TypeError: An argument of the wrong type (a callback that is not one,
                a non-integer epochs, ...).
            ValueError: A value out of range (batch_size < 1, epochs not above
                initial_epoch, validation_freq < 1, validation_steps < 0).
            tarantella.Error: Training failed (on this or another rank).
        """
        where = "fit()"
        distribute = check_bool(where, "tnt_distribute_dataset", tnt_distribute_dataset)
        options = _t.FitOptions(
            epochs=check_int(where, "epochs", epochs),
            initial_epoch=check_int(where, "initial_epoch", initial_epoch),
            steps_per_epoch=check_optional_int(where, "steps_per_epoch", steps_per_epoch),
            validation_freq=check_int(where, "validation_freq", validation_freq),
            validation_steps=check_optional_int(where, "validation_steps", validation_steps),
            verbose=check_int(where, "verbose", verbose),
            micro_batch_size=check_optional_int(where, "tnt_micro_batch_size",
                                                tnt_micro_batch_size),
            validation_micro_batch_size=check_optional_int(
                where, "tnt_validation_micro_batch_size", tnt_validation_micro_batch_size),
            distribute_dataset=distribute, distribute_validation_dataset=distribute)
        check_optional_int(where, "batch_size", batch_size)
        validation_batch = check_optional_int(where, "validation_batch_size",
                                              validation_batch_size)
        if validation_batch is not None and validation_batch < 1:
            raise ValueError(f"fit(): validation_batch_size={validation_batch_size} is invalid: "
                             f"give the GLOBAL batch size of validation, 1 or more, or None for "
                             f"batch_size")
        cbs = self._callbacks(where, callbacks)
        self._warn_if_torch_rates_changed()
        if _autocast_on():
            warnings.warn(
                "fit() runs inside torch.autocast: its forward passes are in low precision "
                "without the engine's loss scaling (float16 gradients may underflow); use "
                "compile(mixed_precision='float16') or 'bfloat16' instead of autocast around fit",
                UserWarning, stacklevel=2)
        train = self._data(x, y, batch_size, check_bool(where, "shuffle", shuffle))
        validation = None
        if isinstance(validation_data, tuple) and len(validation_data) == 3 \
                and self._num_inputs != 2:
            # Keras's (x, y, sample_weight); (x1, x2, y) is a model of 2 inputs.
            raise ValueError(
                f"fit(): validation_data is a tuple of 3, Keras's (x, y, sample_weight), whose "
                f"weights Tarantella does not take (nor fit's sample_weight), or the inputs and "
                f"target of a model of 2 inputs, but it was compiled with "
                f"num_inputs={self._num_inputs}: give (x, y), with x a list for several inputs")
        if validation_data is not None:
            vx, vy = (validation_data if isinstance(validation_data, (tuple, list)) and
                      len(validation_data) == 2 else (validation_data, None))
            # A tnt.data.Dataset is batched already: fit's batch_size is x's.
            validation = self._data(
                vx, vy, validation_batch_size if isinstance(vx, _t.Dataset) or
                validation_batch_size is not None else batch_size, where=where)
        logs = self._impl.fit(train, options, cbs, validation)
        done = len(next(iter(logs.values()), []))
        # The epochs run, also after BackupAndRestore resumed at a later one.
        last = self._impl.epochs_done
        return History(logs, epochs=list(range(last - done, last)), params=options.to_dict())

    # The result's type depends on compile()'s metrics (a float without, a
    # list with), which no hint can know: Any, so that `loss, acc =
    # model.evaluate(...)` type-checks, as Keras's own stubs do.
    @overload
    def evaluate(self, x: object = ..., y: object = ..., batch_size: Optional[int] = ...,
                 verbose: int = ..., callbacks: Optional[Sequence[CallbackLike]] = ...,
                 *, return_dict: Literal[True], tnt_micro_batch_size: Optional[int] = ...,
                 tnt_distribute_dataset: bool = ...,
                 steps: Optional[int] = ...) -> Dict[str, float]: ...

    @overload
    def evaluate(self, x: object = ..., y: object = ..., batch_size: Optional[int] = ...,
                 verbose: int = ..., callbacks: Optional[Sequence[CallbackLike]] = ...,
                 return_dict: bool = ..., tnt_micro_batch_size: Optional[int] = ...,
                 tnt_distribute_dataset: bool = ..., steps: Optional[int] = ...) -> Any: ...

    def evaluate(self, x: object = None, y: object = None, batch_size: Optional[int] = None,
                 verbose: int = 0, callbacks: Optional[Sequence[CallbackLike]] = None,
                 return_dict: bool = False, tnt_micro_batch_size: Optional[int] = None,
                 tnt_distribute_dataset: bool = True, steps: Optional[int] = None
                 ) -> Union[float, List[float], Dict[str, float]]:
        """The global loss and metrics over the whole data set. Collective.

        Args:
            x: As in fit.
            y: As in fit.
            batch_size: The GLOBAL batch size (default 32).
            verbose: 0 silent, 1 progress bar.
            callbacks: As in fit (their test hooks run).
            return_dict: Return a dict of every log instead of a list.
            tnt_micro_batch_size: Checks that each rank's share is this large.
            tnt_distribute_dataset: False: each rank reads the whole dataset as its own.
            steps: Evaluates only the first this many batches (None or 0: all).

        Returns:
            The loss alone without metrics, else [loss, metrics...] in compile
            order; a dict with return_dict=True. The same on every rank.

        Raises:
            TypeError: An argument of the wrong type.
            ValueError: A value out of range (batch_size < 1, steps < 0).
        """
        where = "evaluate()"
        options = _t.EvaluateOptions(
            verbose=check_int(where, "verbose", verbose),
            steps=check_optional_int(where, "steps", steps),
            micro_batch_size=check_optional_int(where, "tnt_micro_batch_size",
                                                tnt_micro_batch_size),
            distribute_dataset=check_bool(where, "tnt_distribute_dataset",
                                          tnt_distribute_dataset))
        check_optional_int(where, "batch_size", batch_size)
        cbs = self._callbacks(where, callbacks)
        logs = self._impl.evaluate(self._data(x, y, batch_size, where=where), options, cbs)
        if check_bool(where, "return_dict", return_dict):
            return logs
        if not self._metric_names:
            return logs["loss"]
        return [logs["loss"]] + [logs[name] for name in self._metric_names]

    @overload
    def predict(self, x: object, batch_size: Optional[int] = ..., verbose: int = ...,
                callbacks: Optional[Sequence[CallbackLike]] = ...,
                tnt_micro_batch_size: Optional[int] = ...,
                tnt_on_all_ranks: Literal[True] = ...) -> torch.Tensor: ...

    @overload
    def predict(self, x: object, batch_size: Optional[int] = ..., verbose: int = ...,
                callbacks: Optional[Sequence[CallbackLike]] = ...,
                tnt_micro_batch_size: Optional[int] = ...,
                tnt_on_all_ranks: bool = ...) -> Optional[torch.Tensor]: ...

    def predict(self, x: object, batch_size: Optional[int] = None, verbose: int = 0,
                callbacks: Optional[Sequence[CallbackLike]] = None,
                tnt_micro_batch_size: Optional[int] = None,
                tnt_on_all_ranks: bool = True) -> Optional[torch.Tensor]:
        """The outputs for every sample, in data-set order. Collective.

        Args:
            x: As in fit (without targets).
            batch_size: The GLOBAL batch size (default 32).
            verbose: Accepted for Keras compatibility; predict prints nothing.
            callbacks: As in fit (their predict hooks run).
            tnt_micro_batch_size: Checks that each rank's share is this large.
            tnt_on_all_ranks: False: the outputs only on the master rank.

        Returns:
            A tensor on every rank; with tnt_on_all_ranks=False None on all but
            the master rank.

        Raises:
            TypeError: An argument of the wrong type.
            ValueError: A value out of range (batch_size < 1).
        """
        where = "predict()"
        check_int(where, "verbose", verbose)
        options = _t.PredictOptions(
            micro_batch_size=check_optional_int(where, "tnt_micro_batch_size",
                                                tnt_micro_batch_size),
            on_all_ranks=check_bool(where, "tnt_on_all_ranks", tnt_on_all_ranks))
        check_optional_int(where, "batch_size", batch_size)
        cbs = self._callbacks(where, callbacks)
        return self._impl.predict(self._data(x, None, batch_size), options, cbs)

    # -- state ---------------------------------------------------------
    @property
    def stop_training(self) -> bool:
        """Set it to True in a callback to stop at the end of the epoch (every rank stops)."""
        return self._impl.stop_training

    @stop_training.setter
    def stop_training(self, value: bool) -> None:
        self._impl.stop_training = bool(value)

    @property
    def learning_rate(self) -> float:
        """The optimizer's learning rate (of its first parameter group); setting it sets all."""
        return self._impl.learning_rate

    @learning_rate.setter
    def learning_rate(self, value: float) -> None:
        self._impl.learning_rate = check_number("Model.learning_rate", "value", value)

    @property
    def group(self) -> _t.ProcessGroup:
        """The process group the model trains over."""
        return self._impl.group

    @property
    def epochs_done(self) -> int:
        """The epochs completed (also restored by load())."""
        return self._impl.epochs_done

    @property
    def loss_scale(self) -> float:
        """The dynamic loss scale of float16 mixed precision (1.0 otherwise)."""
        return self._impl.loss_scale

    def get_weights(self) -> List[torch.Tensor]:
        """The weights, as copies in host memory (as Keras's are host arrays:
        ``w.numpy()`` works, and the GPU holds no second copy).

        Returns:
            Parameters, then buffers, in the module's order, on the CPU.
        """
        return self._impl.get_weights()

    def set_weights(self, weights: Iterable[torch.Tensor]) -> None:
        """Copies `weights` in, then every rank takes the master's. Collective.

        Args:
            weights: As get_weights() returns them (tensors, or numpy arrays as
                Keras's get_weights gives them).
        """
        self._impl.set_weights([w if isinstance(w, torch.Tensor) else torch.as_tensor(w)
                                for w in weights])

    def save_weights(self, path: PathLike, tnt_save_all_devices: bool = False) -> None:
        """Writes parameters and buffers in torch.save format. Collective.

        Args:
            path: The file (torch.load reads it).
            tnt_save_all_devices: Every rank writes (to its own path); else the master.
        """
        self._impl.save_weights(os.fspath(path),
                                check_bool("save_weights()", "tnt_save_all_devices",
                                           tnt_save_all_devices))

    def load_weights(self, path: PathLike) -> None:
        """Reads save_weights' file (or a torch.save'd state_dict); every rank
        then takes the master's. With pipeline stages, each stage takes its
        part of the whole model's file. Collective.

        Args:
            path: The file.
        """
        self._impl.load_weights(os.fspath(path))

    def save(self, path: PathLike, tnt_save_all_devices: bool = False) -> None:
        """Writes a checkpoint of the whole training state (weights, optimizer
        state, epochs, steps, random state) in torch.save format. Collective.
        With pipeline stages the master writes the whole model's state, which
        load() takes at any layout (docs/guide/pipelining.md).

        Args:
            path: The file.
            tnt_save_all_devices: Every rank writes; else the master (with
                pipeline stages, the master only).
        """
        self._impl.save(os.fspath(path),
                        check_bool("save()", "tnt_save_all_devices", tnt_save_all_devices))

    def load(self, path: PathLike) -> int:
        """Restores save()'s checkpoint into this compiled model, also one
        written at another pipeline layout or without stages. Collective.

        Args:
            path: The file.

        Returns:
            The completed epochs: pass them to fit as initial_epoch.
        """
        return self._impl.load(os.fspath(path))

    def summary(self, print_fn: Callable[[str], object] = print) -> None:
        """Prints the layers and parameter counts (on the master rank).

        Args:
            print_fn: Called with the text.
        """
        text = self._impl.summary()
        if text:
            print_fn(text.rstrip("\n"))
