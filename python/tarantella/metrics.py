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

    def hit_state(y_pred, y_true):                  # [hits, batches], on y_pred's device
        hits = (y_pred.argmax(1) == y_true).sum().double()
        return torch.stack([hits, torch.ones_like(hits)])
    hits = tnt.metrics.from_state(                  # any function of summed state
        "hits_per_batch", hit_state, lambda state: state[0] / state[1], state_size=2)

A state made with float(...) or .item() from a GPU tensor makes the host
wait for the GPU at every step: keep it on the device, as above.
"""
from __future__ import annotations

from typing import Callable, List, Optional, Union

import torch

from . import _tarantella as _t

__all__ = ["Metric", "MetricLike", "MetricFn", "mean_of", "from_state", "get"]

Metric = _t.Metric
#: A metric function: (y_pred, y_true) -> per-sample (or per-element) values.
MetricFn = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]
#: What compile(metrics=[...]) takes: a Keras name, a Metric, or a MetricFn.
MetricLike = Union[str, _t.Metric, MetricFn]


def _name_of(fn: object) -> str:
    name = getattr(fn, "__name__", None)
    return name if isinstance(name, str) else type(fn).__name__


def mean_of(fn: MetricFn, name: Optional[str] = None) -> _t.Metric:
    """The mean of `fn`'s values over every sample (and element) of every rank.

    Args:
        fn: (y_pred, y_true) -> a tensor of per-sample values.
        name: The key in the logs (default: the function's __name__).

    Returns:
        The metric, for compile(metrics=[...]).

    Raises:
        TypeError: `fn` is not callable.
    """
    if not callable(fn):
        raise TypeError(f"tnt.metrics.mean_of: fn must be a callable (y_pred, y_true) -> "
                        f"per-sample values, got {fn!r} (a {type(fn).__name__})")
    return _t.metric_mean_of(name or _name_of(fn), fn)


def from_state(name: str, update: Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
               result: Callable[[List[float]], float], state_size: int) -> _t.Metric:
    """A metric from its state, summed over batches and ranks.

    Args:
        name: The key in the logs.
        update: (y_pred, y_true) -> `state_size` numbers (a tensor) to add to the state.
        result: The summed state (a list of floats) -> the value.
        state_size: How many numbers the state has (1 or more).

    Returns:
        The metric, for compile(metrics=[...]).

    Raises:
        TypeError: `update` or `result` is not callable, or `state_size` not an int.
        ValueError: `state_size` is less than 1.
    """
    for arg, value in (("update", update), ("result", result)):
        if not callable(value):
            raise TypeError(f"tnt.metrics.from_state: {arg} must be callable "
                            "(update(y_pred, y_true) -> state tensor, result(state list) -> "
                            f"float), got {value!r}")
    if isinstance(state_size, bool) or not isinstance(state_size, int):
        raise TypeError(f"tnt.metrics.from_state: state_size must be an int, got "
                        f"{state_size!r}")
    if state_size < 1:
        raise ValueError(f"tnt.metrics.from_state: state_size={state_size} is invalid: the "
                         "state has at least 1 number")
    return _t.metric_from_callables(name, update, result, state_size)


def get(identifier: MetricLike) -> _t.Metric:
    """A Metric from what compile() accepts.

    Args:
        identifier: A Keras name, a Metric, or a callable (y_pred, y_true) ->
            per-sample values (its mean).

    Returns:
        The metric.

    Raises:
        TypeError: `identifier` is none of these.
        ValueError: An unknown name (the message lists the known ones).
    """
    if isinstance(identifier, str):
        return _t.metric_by_name(identifier)
    if isinstance(identifier, Metric):
        return identifier
    if callable(identifier):
        return mean_of(identifier)
    raise TypeError(f"compile(): each of metrics must be a name such as 'accuracy', a "
                    f"tnt.metrics.Metric or a callable (y_pred, y_true) -> per-sample values, "
                    f"got {identifier!r} (a {type(identifier).__name__})")
