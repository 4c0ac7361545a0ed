"""`import tarantella` under a Python without torch gives one clear message.

Run without the launcher: each case starts its own interpreter. The missing
torch is simulated by blocking the import (sys.modules["torch"] = None), and,
where PATH's python3 is another Python without torch, with that one too.
"""
import os
import shutil
import subprocess
import sys

import pytest


def run(python, code):
    env = dict(os.environ)
    return subprocess.run([python, "-c", code], env=env, capture_output=True, text=True,
                          timeout=60)


def test_blocked_torch_gives_one_clear_message():
    out = run(sys.executable, "import sys; sys.modules['torch'] = None; import tarantella")
    assert out.returncode != 0
    assert out.stderr.count("tarantella needs PyTorch") == 1, out.stderr
    assert "cannot import torch" in out.stderr
    assert "python3-torch" in out.stderr
    assert "During handling" not in out.stderr  # no chained traceback


def test_other_python_without_torch():
    other = shutil.which("python3")
    if not other or os.path.realpath(other) == os.path.realpath(sys.executable):
        pytest.skip("PATH's python3 is the interpreter the package was built for")
    if run(other, "import torch").returncode == 0:
        pytest.skip(f"{other} has torch")
    out = run(other, "import tarantella")
    assert out.returncode != 0
    assert "tarantella needs PyTorch" in out.stderr, out.stderr
    assert other in out.stderr or os.path.realpath(other) in out.stderr or "python" in out.stderr


def test_the_torch_it_was_built_for_is_recorded():
    out = run(sys.executable, "import torch, tarantella._build_info as b; "
                              "print(b.TORCH_VERSION == torch.__version__, b.TORCH_VERSION)")
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("True "), out.stdout


def test_another_torch_version_is_refused_by_name():
    # As if this torch were another release than the one the core was built
    # against: the package says so, with both versions and the fix.
    code = ("import torch; torch.__version__ = '0.0.1+other'; import tarantella")
    out = run(sys.executable, code)
    assert out.returncode != 0
    assert "was built against torch" in out.stderr, out.stderr
    assert "has torch 0.0.1+other" in out.stderr
    assert "pip install --force-reinstall --no-deps ." in out.stderr
    assert "During handling" not in out.stderr
