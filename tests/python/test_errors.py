"""C++ errors arrive as Python exceptions of the matching class, with the C++ message."""
import pytest
import torch

import tarantella as tnt
from tarantella import _tarantella


def test_class_hierarchy():
    assert issubclass(tnt.Error, RuntimeError)
    assert issubclass(tnt.MismatchError, tnt.Error)
    assert issubclass(tnt.TimeoutError, tnt.Error)
    assert not issubclass(tnt.MismatchError, tnt.TimeoutError)
    assert tnt.Error.__module__ == "tarantella"


@pytest.mark.parametrize("kind, cls", [("error", tnt.Error), ("mismatch", tnt.MismatchError),
                                       ("timeout", tnt.TimeoutError)])
def test_each_cpp_type_maps_to_its_class(kind, cls):
    message = f"[tarantella rank 0] the {kind} message: fix it so"
    with pytest.raises(cls) as info:
        _tarantella._testing.raise_error(kind, message)
    assert type(info.value) is cls
    assert str(info.value) == message


def test_cpp_check_in_the_library_is_a_tnt_error(rank):
    outsider = tnt.world().subgroup([0])
    if rank == 0:
        return
    with pytest.raises(tnt.Error, match="not a member"):
        outsider.allreduce(torch.zeros(1))


def test_bad_batch_size_is_a_value_error_naming_value_and_fix(size):
    with pytest.raises(ValueError, match="batch_size=0 is invalid: give the GLOBAL batch size"):
        _tarantella.dataset_from_python(torch.zeros(4), None, 0)


def test_mismatched_collective_raises_on_every_rank(rank, size):
    if size < 2:
        pytest.skip("needs two ranks")
    with pytest.raises(tnt.MismatchError) as info:
        tnt.allreduce(torch.zeros(3 if rank == 0 else 4))
    assert "rank" in str(info.value)
    tnt.barrier()  # the group still works after a mismatch


def test_pipeline_check_is_a_tnt_error():
    ds = tnt.data.Dataset.from_tensor_slices(torch.zeros(4, 2))
    with pytest.raises(tnt.Error):
        tnt.data.Dataset.from_tensor_slices((torch.zeros(4), torch.zeros(5)))
    assert len(ds) == 4
