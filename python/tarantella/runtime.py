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
import atexit
import sys
import traceback

from . import _tarantella

_runtime = None
_closed = False


def init():
    """Starts the runtime unless it runs already. Returns nothing."""
    global _runtime
    if _runtime is not None:
        return
    if _closed:
        raise _tarantella.Error(
            "[tarantella] the runtime was shut down and MPI cannot start twice in a process: "
            "call tnt.shutdown() only at the very end, or not at all (it runs at exit)")
    _runtime = _tarantella.Runtime()
    atexit.register(shutdown)
    sys.excepthook = _excepthook


def shutdown():
    """Collective: stops the runtime and finalizes MPI (runs by itself at exit)."""
    global _runtime, _closed
    if _runtime is None:
        return
    runtime, _runtime = _runtime, None
    _closed = True
    runtime.close()


def is_initialized():
    return _tarantella.is_initialized()


def get_rank():
    """This rank's number in 0..get_size()-1."""
    return _tarantella.get_rank()


def get_size():
    """The number of ranks in the job."""
    return _tarantella.get_size()


def get_master_rank():
    """The master rank, which logs and saves: always 0."""
    return _tarantella.get_master_rank()


def is_master_rank():
    return _tarantella.is_master_rank()


def get_local_rank():
    """This rank's number among the ranks on its node (for device binding)."""
    return _tarantella.get_local_rank()


def get_local_size():
    return _tarantella.get_local_size()


def world():
    """The group of every rank: a tnt.ProcessGroup."""
    return _tarantella.world()


def set_seed(seed, deterministic=True):
    """Seeds every random source a training run uses, on every rank alike: torch's
    generators (the same LibTorch), the default shuffle seed of tnt.data, C's
    rand(), and Python's `random` and numpy's global generator; with
    `deterministic`, torch's deterministic algorithms. Call it on every rank with
    the same seed, before building the model and the data."""
    import random
    random.seed(seed)
    try:
        import numpy
        numpy.random.seed(seed % 2**32)
    except ImportError:
        pass
    _tarantella.set_seed(int(seed), bool(deterministic))


def _rank_label():
    try:
        return f"[tarantella rank {_tarantella.get_rank()}] "
    except Exception:
        return "[tarantella] "


def _excepthook(exc_type, exc, tb):
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
