"""Keras-style callbacks for tnt.Model.fit / evaluate / predict.

The built-ins are the C++ ones (the same objects the C++ front end uses):
ModelCheckpoint, EarlyStopping, CSVLogger, TensorBoard, LearningRateScheduler,
ReduceLROnPlateau, BackupAndRestore, TerminateOnNaN, ProgbarLogger,
RemoteMonitor. Write your own by subclassing Callback and overriding Keras's
hooks; the logs they get are global values, aggregated over ranks exactly
(aggregate_logs=False gives this rank's own), and they run on every rank
(run_on_all_ranks=False: the master rank only).

    class PrintLoss(tnt.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            if tnt.is_master_rank():
                print(epoch, logs["loss"])
"""
from . import _tarantella as _t

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

__all__ = ["Callback", "LambdaCallback", "History", "ModelCheckpoint", "EarlyStopping",
           "CSVLogger", "TensorBoard", "LearningRateScheduler", "ReduceLROnPlateau",
           "BackupAndRestore", "TerminateOnNaN", "ProgbarLogger", "RemoteMonitor"]


class Callback:
    """Base class with Keras's hook names; override the ones you need.
    `self.model` is the tnt.Model being trained, `self.params` its epochs,
    steps and verbosity."""

    def __init__(self, aggregate_logs=True, run_on_all_ranks=True):
        self.aggregate_logs = aggregate_logs
        self.run_on_all_ranks = run_on_all_ranks
        self.model = None
        self.params = {}

    def set_model(self, model):
        self.model = model

    def set_params(self, params):
        self.params = params

    def on_train_begin(self, logs=None): pass
    def on_train_end(self, logs=None): pass
    def on_epoch_begin(self, epoch, logs=None): pass
    def on_epoch_end(self, epoch, logs=None): pass
    def on_train_batch_begin(self, batch, logs=None): pass
    def on_train_batch_end(self, batch, logs=None): pass
    def on_test_begin(self, logs=None): pass
    def on_test_end(self, logs=None): pass
    def on_test_batch_begin(self, batch, logs=None): pass
    def on_test_batch_end(self, batch, logs=None): pass
    def on_predict_begin(self, logs=None): pass
    def on_predict_end(self, logs=None): pass
    def on_predict_batch_begin(self, batch, logs=None): pass
    def on_predict_batch_end(self, batch, logs=None): pass


_HOOKS = ["on_train_begin", "on_train_end", "on_epoch_begin", "on_epoch_end",
          "on_train_batch_begin", "on_train_batch_end", "on_test_begin", "on_test_end",
          "on_test_batch_begin", "on_test_batch_end", "on_predict_begin", "on_predict_end",
          "on_predict_batch_begin", "on_predict_batch_end"]


class LambdaCallback(Callback):
    """Keras's LambdaCallback: hooks as keyword arguments, e.g.
    LambdaCallback(on_epoch_end=lambda epoch, logs: print(epoch, logs))."""

    def __init__(self, aggregate_logs=True, run_on_all_ranks=True, **hooks):
        super().__init__(aggregate_logs, run_on_all_ranks)
        for name, fn in hooks.items():
            if name not in _HOOKS:
                raise _t.Error(f"LambdaCallback: '{name}' is not a callback hook; use one of "
                               f"{', '.join(_HOOKS)}")
            setattr(self, name, fn)


class History:
    """What fit() returns: .history maps each log ('loss', 'val_loss',
    metric names) to its value per epoch; .epoch lists the epochs."""

    def __init__(self, history, epochs, params):
        self.history = dict(history)
        self.epoch = epochs
        self.params = params

    def __repr__(self):
        return f"History(epochs={self.epoch}, history={self.history})"
