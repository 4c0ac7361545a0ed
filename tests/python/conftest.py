"""Shared by the Python tests: each file runs on every rank of a launcher job
(tarantella -n N -- python3 -m pytest ...), so a test sees the whole job
through tnt.get_rank()/get_size() and checks collective results on every rank."""
import os
import sys

import pytest

import tarantella as tnt


@pytest.fixture
def rank():
    return tnt.get_rank()


@pytest.fixture
def size():
    return tnt.get_size()


def pytest_report_header(config):
    return f"tarantella rank {tnt.get_rank()} of {tnt.get_size()}, python {sys.executable}"
