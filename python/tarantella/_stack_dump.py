"""This rank's Python stack, for the report of a collective it did not reach.

When a collective times out, the ranks that arrived ask the missing rank
where it is (src/comm/check/stack_service.h). The C++ runtime then signals this
process's main thread with a real-time signal and reads what its handler
writes into a pipe: the C++ stack. Registered here for the same signal and
pipe, faulthandler first writes the Python stack of every thread, then
chains to that handler, so a Python rank is reported by file and line, e.g.
``rank 1 (host vm) is in stuck.py line 10 (time.sleep) ← train() ← <module>``.
"""
from __future__ import annotations

import faulthandler
from typing import Optional

from . import _tarantella

_signal: Optional[int] = None


def register() -> None:
    """Adds the Python stack to this rank's dump (after the runtime started)."""
    global _signal
    signum, fd = _tarantella._stack_dump_target()
    if fd < 0 or _signal is not None:
        return
    faulthandler.register(signum, file=fd, all_threads=True, chain=True)
    _signal = signum


def unregister() -> None:
    """Before the runtime stops: its pipe closes with it."""
    global _signal
    if _signal is None:
        return
    faulthandler.unregister(_signal)
    _signal = None
