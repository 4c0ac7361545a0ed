"""Shared by the Python tests: each file runs on every rank of a launcher job
(tarantella -n N -- python3 -m pytest ...), so a test sees the whole job
through tnt.get_rank()/get_size() and checks collective results on every rank.

On a machine with a GPU a tnt.Model moves its module there (the launcher
gives each rank one when it can; --no-gpu says the CPU): the tests compare on
the model's device or move both sides to the CPU, and float32 stays float32:
no TF32, whose 10-bit inputs are far beyond the 1e-5 at which the tests
compare with a plain torch loop. Set with the legacy switches, as the C++
engine reads them (mixed with torch's newer fp32_precision settings, torch
refuses to read either)."""
import os
import sys

import pytest
import torch

import tarantella as tnt

torch.backends.cudnn.allow_tf32 = False
torch.backends.cuda.matmul.allow_tf32 = False


@pytest.fixture
def rank():
    return tnt.get_rank()


@pytest.fixture
def size():
    return tnt.get_size()


def pytest_report_header(config):
    return f"tarantella rank {tnt.get_rank()} of {tnt.get_size()}, python {sys.executable}"
