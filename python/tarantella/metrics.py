"""tnt.metrics: metrics for tnt.Model.compile, exact over ranks.

A metric keeps a STATE, a few numbers that each batch adds to (say, the
correct predictions and the samples); the state is summed over all steps
and ranks and the value is computed once from the global sum. So a
distributed metric is the serial one exactly, never a mean of per-rank
means. The built-ins are the C++ ones, by Keras's names ('accuracy',
'sparse_categorical_accuracy', 'mse', ...). Your own:

    def abs_error(y_pred, y_true):                 # per-sample (or per-element) values
        return (y_pred - y_true).abs()
    model.compile(..., metrics=["mse", abs_error])  # the mean over the whole epoch

    hits = tnt.metrics.from_state(                  # any function of summed state
        "hits_per_batch", lambda y_pred, y_true: torch.tensor(
            [float((y_pred.argmax(1) == y_true).sum()), 1.0]),
        lambda state: state[0] / state[1], state_size=2)
"""
from . import _tarantella as _t

__all__ = ["Metric", "mean_of", "from_state", "get"]

Metric = _t.Metric


def _name_of(fn):
    return getattr(fn, "__name__", type(fn).__name__)


def mean_of(fn, name=None):
    """The mean, over every sample (and element) of every rank, of
    `fn(y_pred, y_true)` -> a tensor of per-sample values. `name` (default:
    the function's) is the key in the logs."""
    if not callable(fn):
        raise _t.Error(f"tnt.metrics.mean_of needs a callable (y_pred, y_true) -> per-sample "
                       f"values, got a {type(fn).__name__}")
    return _t.metric_mean_of(name or _name_of(fn), fn)


def from_state(name, update, result, state_size):
    """A metric from its state: `update(y_pred, y_true)` returns `state_size`
    numbers (a tensor) that are summed over batches and ranks;
    `result(state)` turns the summed state (a list of floats) into the
    value."""
    if not (callable(update) and callable(result)):
        raise _t.Error("tnt.metrics.from_state needs two callables, update(y_pred, y_true) -> "
                       "state tensor and result(state list) -> float")
    if int(state_size) < 1:
        raise _t.Error(f"tnt.metrics.from_state: state_size must be at least 1, got "
                       f"{state_size}")
    return _t.metric_from_callables(name, update, result, int(state_size))


def get(identifier):
    """A Metric from what compile() accepts: a Keras name, a Metric, or a
    callable (y_pred, y_true) -> per-sample values (its mean)."""
    if isinstance(identifier, str):
        return _t.metric_by_name(identifier)
    if isinstance(identifier, Metric):
        return identifier
    if callable(identifier):
        return mean_of(identifier)
    raise _t.Error(f"compile(): a metric must be a name such as 'accuracy', a "
                   f"tnt.metrics.Metric or a callable (y_pred, y_true) -> per-sample values, "
                   f"got a {type(identifier).__name__}")
