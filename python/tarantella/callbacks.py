"""Keras-style callbacks for tnt.Model.fit / evaluate / predict.

The built-ins are the C++ ones (the same objects the C++ front end uses):
ModelCheckpoint, EarlyStopping, CSVLogger, TensorBoard, LearningRateScheduler,
ReduceLROnPlateau, BackupAndRestore, TerminateOnNaN, ProgbarLogger,
RemoteMonitor. Write your own by subclassing Callback and overriding Keras's
hooks; the logs they get are global values, aggregated over ranks exactly
(aggregate_logs=False gives this rank's own), and they run on every rank
(run_on_all_ranks=False: the master rank only).

The built-ins take their required argument (a file, a directory, a
schedule) positionally and every option as a keyword argument, or all of
them as the typed options struct (EarlyStopping(EarlyStoppingOptions(
patience=3)) is EarlyStopping(patience=3)); an option left out takes the C++
options struct's default, which tnt.callbacks.option_defaults("EarlyStopping")
shows.

    class PrintLoss(tnt.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            if tnt.is_master_rank():
                print(epoch, logs["loss"])
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Dict, List, Mapping, Optional, Union

from . import _tarantella as _t

if TYPE_CHECKING:
    from .model import Model

ModelCheckpoint = _t.ModelCheckpoint
EarlyStopping = _t.EarlyStopping
CSVLogger = _t.CSVLogger
TensorBoard = _t.TensorBoard
LearningRateScheduler = _t.LearningRateScheduler
ReduceLROnPlateau = _t.ReduceLROnPlateau
BackupAndRestore = _t.BackupAndRestore
TerminateOnNaN = _t.TerminateOnNaN
ProgbarLogger = _t.ProgbarLogger
RemoteMonitor = _t.RemoteMonitor
# Their options structs: the same options as one typed object.
EarlyStoppingOptions = _t.EarlyStoppingOptions
CSVLoggerOptions = _t.CSVLoggerOptions
LearningRateSchedulerOptions = _t.LearningRateSchedulerOptions
ReduceLROnPlateauOptions = _t.ReduceLROnPlateauOptions
BackupAndRestoreOptions = _t.BackupAndRestoreOptions
ProgbarLoggerOptions = _t.ProgbarLoggerOptions
RemoteMonitorOptions = _t.RemoteMonitorOptions

__all__ = ["Callback", "LambdaCallback", "History", "ModelCheckpoint", "EarlyStopping",
           "CSVLogger", "TensorBoard", "LearningRateScheduler", "ReduceLROnPlateau",
           "BackupAndRestore", "TerminateOnNaN", "ProgbarLogger", "RemoteMonitor", "Logs",
           "option_defaults", "EarlyStoppingOptions", "CSVLoggerOptions",
           "LearningRateSchedulerOptions", "ReduceLROnPlateauOptions", "BackupAndRestoreOptions",
           "ProgbarLoggerOptions", "RemoteMonitorOptions"]

#: The logs a hook gets: name -> global value ('loss', metric names, ...).
Logs = Optional[Dict[str, float]]
#: fit()'s params: epochs, steps and verbosity (steps None when unknown).
Params = Dict[str, Optional[int]]


def option_defaults(name: str) -> Dict[str, object]:
    """The defaults of a callback's options, read from its C++ options struct.

    Args:
        name: A callback class's name ("EarlyStopping", "Callback", ...).

    Returns:
        Option name -> default value.

    Raises:
        ValueError: `name` is not known (the message lists the known names).
    """
    return _t.option_defaults(name)


# aggregate_logs' and run_on_all_ranks' defaults: C++'s (callbacks::WrapOptions).
_BASE = option_defaults("Callback")


def _base_default(value: Optional[bool], key: str) -> bool:
    return bool(_BASE[key]) if value is None else value


class Callback:
    """Base class with Keras's hook names; override the ones you need.

    Only the hooks a subclass overrides are called (the C++ side decides once
    per fit/evaluate/predict), so a callback with only on_epoch_end costs
    nothing per step.

    Attributes:
        model: The tnt.Model being trained (set by fit/evaluate/predict).
        params: fit()'s epochs, steps and verbosity.
        aggregate_logs: True: logs are global, aggregated over ranks exactly;
            False: this rank's own.
        run_on_all_ranks: True: the hooks run on every rank; False: on the
            master rank only.
    """

    def __init__(self, aggregate_logs: Optional[bool] = None,
                 run_on_all_ranks: Optional[bool] = None) -> None:
        """Makes the callback.

        Args:
            aggregate_logs: Global logs (True) or this rank's (False); None:
                the C++ default (global).
            run_on_all_ranks: Hooks on every rank (True) or the master only
                (False); None: the C++ default (every rank).
        """
        self.aggregate_logs = _base_default(aggregate_logs, "aggregate_logs")
        self.run_on_all_ranks = _base_default(run_on_all_ranks, "run_on_all_ranks")
        self._model: Optional[Model] = None
        self.params: Params = {}

    # A property, not an Optional attribute: in a hook the model is always
    # set, and `self.model.stop_training = True` type-checks as written.
    @property
    def model(self) -> Model:
        """The tnt.Model being trained, evaluated or predicted with.

        Raises:
            AttributeError: Outside fit/evaluate/predict, before set_model.
        """
        if self._model is None:
            raise AttributeError(f"{type(self).__name__}.model is set by fit(), evaluate() and "
                                 "predict() (or set_model): it is not known yet")
        return self._model

    @model.setter
    def model(self, model: Model) -> None:
        self._model = model

    def set_model(self, model: Model) -> None:
        """Called by fit/evaluate/predict with the model.

        Args:
            model: The tnt.Model.
        """
        self.model = model

    def set_params(self, params: Params) -> None:
        """Called with fit()'s params.

        Args:
            params: Epochs, steps and verbosity.
        """
        self.params = params

    def on_train_begin(self, logs: Logs = None) -> None:
        """At the start of fit().

        Args:
            logs: Empty (Keras passes none).
        """

    def on_train_end(self, logs: Logs = None) -> None:
        """At the end of fit().

        Args:
            logs: The last epoch's logs.
        """

    def on_epoch_begin(self, epoch: int, logs: Logs = None) -> None:
        """Before an epoch.

        Args:
            epoch: The epoch, counted from 0.
            logs: Empty.
        """

    def on_epoch_end(self, epoch: int, logs: Logs = None) -> None:
        """After an epoch.

        Args:
            epoch: The epoch, counted from 0.
            logs: Its global logs, validation ('val_...') and 'lr' included.
        """

    def on_train_batch_begin(self, batch: int, logs: Logs = None) -> None:
        """Before a training step.

        Args:
            batch: The step within the epoch, from 0.
            logs: Empty.
        """

    def on_train_batch_end(self, batch: int, logs: Logs = None) -> None:
        """After a training step.

        Args:
            batch: The step within the epoch, from 0.
            logs: The epoch's running logs.
        """

    def on_test_begin(self, logs: Logs = None) -> None:
        """At the start of evaluate() or a validation.

        Args:
            logs: Empty.
        """

    def on_test_end(self, logs: Logs = None) -> None:
        """At the end of evaluate() or a validation.

        Args:
            logs: Its logs.
        """

    def on_test_batch_begin(self, batch: int, logs: Logs = None) -> None:
        """Before an evaluation step.

        Args:
            batch: The step, from 0.
            logs: Empty.
        """

    def on_test_batch_end(self, batch: int, logs: Logs = None) -> None:
        """After an evaluation step.

        Args:
            batch: The step, from 0.
            logs: The running logs.
        """

    def on_predict_begin(self, logs: Logs = None) -> None:
        """At the start of predict().

        Args:
            logs: Empty.
        """

    def on_predict_end(self, logs: Logs = None) -> None:
        """At the end of predict().

        Args:
            logs: Empty.
        """

    def on_predict_batch_begin(self, batch: int, logs: Logs = None) -> None:
        """Before a prediction step.

        Args:
            batch: The step, from 0.
            logs: Empty.
        """

    def on_predict_batch_end(self, batch: int, logs: Logs = None) -> None:
        """After a prediction step.

        Args:
            batch: The step, from 0.
            logs: Empty.
        """


_HOOKS = ["on_train_begin", "on_train_end", "on_epoch_begin", "on_epoch_end",
          "on_train_batch_begin", "on_train_batch_end", "on_test_begin", "on_test_end",
          "on_test_batch_begin", "on_test_batch_end", "on_predict_begin", "on_predict_end",
          "on_predict_batch_begin", "on_predict_batch_end"]

#: A LambdaCallback hook: (logs) or (epoch or batch, logs).
Hook = Union[Callable[[Logs], object], Callable[[int, Logs], object]]


class LambdaCallback(Callback):
    """Keras's LambdaCallback: hooks as keyword arguments.

    Example:
        LambdaCallback(on_epoch_end=lambda epoch, logs: print(epoch, logs))
    """

    def __init__(self, aggregate_logs: Optional[bool] = None,
                 run_on_all_ranks: Optional[bool] = None, **hooks: Hook) -> None:
        """Makes the callback.

        Args:
            aggregate_logs: As Callback's.
            run_on_all_ranks: As Callback's.
            **hooks: Hook name -> function, e.g. on_epoch_end=lambda epoch, logs: ...

        Raises:
            TypeError: A keyword is not a hook name, or its value not callable.
        """
        super().__init__(aggregate_logs, run_on_all_ranks)
        for name, fn in hooks.items():
            if name not in _HOOKS:
                raise TypeError(f"LambdaCallback got an unexpected keyword argument '{name}': "
                                f"it is not a callback hook; use one of {', '.join(_HOOKS)}")
            if not callable(fn):
                raise TypeError(f"LambdaCallback: {name} must be callable, got {fn!r}")
            setattr(self, name, fn)


class History:
    """What fit() returns.

    Attributes:
        history: Each log ('loss', 'val_loss', metric names, 'lr' when a
            learning-rate callback ran) -> its value per epoch.
        epoch: The epochs trained, e.g. [0, 1, 2].
        params: fit()'s settings.
    """

    def __init__(self, history: Mapping[str, List[float]], epochs: List[int],
                 params: Mapping[str, object]) -> None:
        """Makes the record.

        Args:
            history: Log name -> values per epoch.
            epochs: The epochs trained.
            params: fit()'s settings.
        """
        self.history: Dict[str, List[float]] = dict(history)
        self.epoch = epochs
        self.params = dict(params)

    def __repr__(self) -> str:
        return f"History(epochs={self.epoch}, history={self.history})"
