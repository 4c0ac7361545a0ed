"""The runtime's lifetime in a Python process, and the rank API.

The runtime (MPI and the world group) starts when the package is imported
(or at tnt.init(); both may happen any number of times) and stops at
interpreter exit through atexit, a collective that every rank reaches, so
MPI finalizes cleanly.

A Python exception that nobody catches is a rank failure like a C++ one: a
sys.excepthook prints the traceback, each line prefixed with the rank, and
then ends the rank through the C++ runtime (tnt::fail_rank: one report line
"tarantella: rank R on host H failed: ...", exit status 1), so the launcher
stops the other ranks within seconds and they print nothing. Ctrl+C
(KeyboardInterrupt) ends the rank the same way.
"""
from __future__ import annotations

import atexit
import sys
import traceback
from types import TracebackType
from typing import Optional, Type

from . import _stack_dump, _tarantella
from ._args import check_bool, check_int

_runtime: Optional[_tarantella.Runtime] = None
_closed = False


def init() -> None:
    """Starts the runtime (MPI and the world group) unless it runs already.

    Raises:
        tarantella.Error: The runtime was shut down before (MPI cannot start twice).
    """
    global _runtime
    if _runtime is not None:
        return
    if _closed:
        raise _tarantella.Error(
            "[tarantella] the runtime was shut down and MPI cannot start twice in a process: "
            "call tnt.shutdown() only at the very end, or not at all (it runs at exit)")
    _runtime = _tarantella.Runtime()
    _stack_dump.register()
    atexit.register(shutdown)
    sys.excepthook = _excepthook


def shutdown() -> None:
    """Stops the runtime and finalizes MPI. Collective; runs by itself at exit."""
    global _runtime, _closed
    if _runtime is None:
        return
    runtime, _runtime = _runtime, None
    _closed = True
    _stack_dump.unregister()
    runtime.close()


def is_initialized() -> bool:
    """Whether the runtime runs.

    Returns:
        True between init() (or import) and shutdown().
    """
    return _tarantella.is_initialized()


def get_rank() -> int:
    """This rank's number.

    Returns:
        A number in 0..get_size()-1.
    """
    return _tarantella.get_rank()


def get_size() -> int:
    """The number of ranks in the job.

    Returns:
        The world group's size.
    """
    return _tarantella.get_size()


def get_master_rank() -> int:
    """The master rank, which logs and saves.

    Returns:
        Always 0.
    """
    return _tarantella.get_master_rank()


def is_master_rank() -> bool:
    """Whether this is the master rank.

    Returns:
        True on rank 0.
    """
    return _tarantella.is_master_rank()


def get_local_rank() -> int:
    """This rank's number among the ranks on its node (for device binding).

    Returns:
        A number in 0..get_local_size()-1.
    """
    return _tarantella.get_local_rank()


def get_local_size() -> int:
    """The number of ranks on this rank's node.

    Returns:
        The node's rank count.
    """
    return _tarantella.get_local_size()


def world() -> _tarantella.ProcessGroup:
    """The group of every rank.

    Returns:
        A tnt.ProcessGroup (the C++ handle, which the C++ API accepts too).
    """
    return _tarantella.world()


def set_seed(seed: int, deterministic: bool = True) -> None:
    """Seeds every random source a training run uses, on every rank alike.

    That is torch's generators (the same LibTorch), the default shuffle seed
    of tnt.data, C's rand(), Python's `random` and numpy's global generator.
    Call it on every rank with the same seed, before building the model and
    the data.

    Args:
        seed: The seed (an int).
        deterministic: Also switch torch to deterministic algorithms.

    Raises:
        TypeError: `seed` is not an int or `deterministic` not a bool.
    """
    import random
    check_int("set_seed()", "seed", seed)
    check_bool("set_seed()", "deterministic", deterministic)
    random.seed(seed)
    try:
        import numpy
        numpy.random.seed(seed % 2**32)
    except ImportError:
        pass
    _tarantella.set_seed(seed, deterministic)


def _rank_label() -> str:
    try:
        return f"[tarantella rank {_tarantella.get_rank()}] "
    except Exception:
        return "[tarantella] "


def _excepthook(exc_type: Type[BaseException], exc: BaseException,
                tb: Optional[TracebackType]) -> None:
    prefix = _rank_label()
    if issubclass(exc_type, KeyboardInterrupt):
        summary = "interrupted (KeyboardInterrupt, Ctrl+C)"
        lines = []
    else:
        summary = "".join(traceback.format_exception_only(exc_type, exc)).strip()
        lines = traceback.format_exception(exc_type, exc, tb)
    text = "".join(prefix + line + "\n" for chunk in lines for line in chunk.rstrip("\n").split("\n"))
    try:
        sys.stdout.flush()
        sys.stderr.write(text)
        sys.stderr.flush()
    except Exception:
        pass
    _tarantella.fail_rank(summary)
