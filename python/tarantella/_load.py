"""Loads the compiled core, after checking that torch imports.

Why a check first: the extension links libtorch_python and is built for one
interpreter (the one recorded in _build_info.py). Under another Python, or
one without torch, importing it fails with an obscure loader error; this
says instead which interpreter, what failed and the fix, in one message.
"""
from __future__ import annotations

import sys
from types import ModuleType


def _built_for() -> str:
    try:
        from . import _build_info
        return str(_build_info.PYTHON_EXECUTABLE)
    except ImportError:  # a source tree without a build
        return "/usr/bin/python3"


def _built_for_torch() -> str:
    try:
        from . import _build_info
        return str(getattr(_build_info, "TORCH_VERSION", ""))
    except ImportError:
        return ""


def load() -> ModuleType:
    """Imports the compiled core, with one clear message when it cannot load.

    Returns:
        The _tarantella extension module.

    Raises:
        ImportError: torch is missing, or of another version than the one the
            core was built against, or the core does not load in this Python.
    """
    try:
        import torch  # (registers the tensor types the extension uses)
    except ImportError as e:
        raise ImportError(
            f"tarantella needs PyTorch, but this Python ({sys.executable}) cannot import "
            f"torch ({e}). Run your script with the interpreter tarantella was built for, "
            f"{_built_for()} (Debian's python3 with python3-torch: apt-get install "
            f"python3-torch), e.g. `tarantella -n 2 -- {_built_for()} train.py`.") from None
    built_torch = _built_for_torch()
    if built_torch and torch.__version__ != built_torch:
        raise ImportError(
            f"tarantella was built against torch {built_torch}, but this Python "
            f"({sys.executable}) has torch {torch.__version__}: its compiled core links "
            f"LibTorch's C++ API, which changes between releases. Rebuild it against this "
            f"torch (`pip install --force-reinstall --no-deps .` in the source "
            f"tree, or configure CMake with this torch), or install torch=={built_torch}."
        ) from None
    try:
        from . import _tarantella
    except ImportError as e:
        raise ImportError(
            f"tarantella's compiled core does not load in this Python ({sys.executable}, "
            f"{sys.version.split()[0]}): {e}. It was built for {_built_for()}: run your script "
            f"with that interpreter, or rebuild with -DTNT_PYTHON_EXECUTABLE={sys.executable}."
        ) from None
    if getattr(_tarantella, "__file__", None) is None:
        # Only the folder of the core's type stubs (_tarantella/*.pyi), taken
        # as a namespace package: the compiled module is not beside it.
        raise ImportError(
            "tarantella's compiled core (_tarantella.*.so) is not in "
            f"{list(getattr(_tarantella, '__path__', []))}: import the package as built "
            "(PYTHONPATH=<build>/python) or installed, not from the source tree")
    return _tarantella
