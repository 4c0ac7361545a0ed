"""Tarantella: synchronous data-parallel training for PyTorch, on MPI.

    import tarantella as tnt          # starts the runtime (MPI) on import
    print(tnt.get_rank(), tnt.get_size())

Run a script on N ranks with the launcher: `tarantella -n 4 -- train.py`.
The user gives GLOBAL batch sizes; each rank computes its share of every
batch. See docs/python.md.
"""
from ._load import load as _load

_load()  # checks torch first, with one clear message if the core cannot load
from . import _tarantella  # noqa: E402

from ._tarantella import Error, MismatchError, TimeoutError  # noqa: E402
from ._tarantella import ProcessGroup  # noqa: E402
from .runtime import (  # noqa: E402
    init, shutdown, is_initialized, get_rank, get_size, get_master_rank, is_master_rank,
    get_local_rank, get_local_size, set_seed, world)
from .collectives import (  # noqa: E402
    allreduce, broadcast, allgather, barrier, broadcast_object, sum_over_ranks)
from . import data  # noqa: E402
from .optimizer import DistributedOptimizer  # noqa: E402

init()

from . import metrics  # noqa: E402
from .model import Model, PipelinePosition  # noqa: E402
from . import callbacks  # noqa: E402
from . import nn  # noqa: E402

# What `import tarantella as tnt` offers (also for mypy --strict in users'
# code, which needs imported names listed to re-export them).
__all__ = [
    "Error", "MismatchError", "TimeoutError", "ProcessGroup",
    "init", "shutdown", "is_initialized", "get_rank", "get_size", "get_master_rank",
    "is_master_rank", "get_local_rank", "get_local_size", "set_seed", "world",
    "allreduce", "broadcast", "allgather", "barrier", "broadcast_object", "sum_over_ranks",
    "data", "DistributedOptimizer", "metrics", "Model", "PipelinePosition", "callbacks", "nn",
    "__version__"]

__version__ = "0.1.0"
try:
    from ._build_info import VERSION as __version__  # noqa: F811
except ImportError:
    pass
