"""tnt.data.Dataset (the C++ pipeline) and dataset_from_python, what fit() is given."""
import os

import numpy as np
import pytest
import torch

import tarantella as tnt
from tarantella import _tarantella


def batches(ds, epoch=None):
    it = ds if epoch is None else ds.iterate(epoch)
    return [tuple(t.clone() for t in b) for b in it]


def test_from_tensor_slices_batch_and_len():
    x = torch.arange(10.0).reshape(10, 1)
    y = torch.arange(10)
    ds = tnt.data.Dataset.from_tensor_slices((x, y)).batch(4)
    assert len(ds) == 3
    got = batches(ds)
    assert [b[1].tolist() for b in got] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    assert got[0][0].shape == (4, 1) and got[0][0].dtype == torch.float32
    assert len(tnt.data.Dataset.from_tensor_slices((x, y)).batch(4, drop_remainder=True)) == 2


def test_numpy_inputs_are_shared_not_copied():
    a = np.arange(6, dtype=np.float32).reshape(3, 2)
    ds = tnt.data.Dataset.from_tensors(a)
    (t,) = next(iter(ds))
    assert t.tolist() == a.tolist()


def test_shuffle_same_order_per_epoch_on_every_rank():
    ds = tnt.data.Dataset.range(0, 20).shuffle(20, seed=7)
    e0 = [int(b[0]) for b in ds.iterate(0)]
    e1 = [int(b[0]) for b in ds.iterate(1)]
    assert sorted(e0) == list(range(20)) and e0 != e1
    assert e0 == [int(b[0]) for b in ds.iterate(0)]
    everyone = tnt.allgather(torch.tensor([e0]))
    assert all(row.tolist() == e0 for row in everyone)
    # Range-for counts epochs per Dataset.
    assert [int(b[0]) for b in ds] == e0
    assert [int(b[0]) for b in ds] == e1


def test_map_with_python_callable_and_workers():
    ds = tnt.data.Dataset.from_tensor_slices((torch.arange(8.0), torch.arange(8)))
    doubled = ds.map(lambda x, y: (x * 2, y), num_workers=3).batch(8)
    (x, y), = batches(doubled)
    assert x.tolist() == [2.0 * i for i in range(8)] and y.tolist() == list(range(8))
    single = tnt.data.Dataset.range(0, 3).map(lambda i: i + 1)
    assert [int(b[0]) for b in single] == [1, 2, 3]


def test_map_exception_reaches_python():
    def boom(x):
        raise KeyError("bad sample")
    with pytest.raises(KeyError, match="bad sample"):
        list(tnt.data.Dataset.range(0, 3).map(boom))


def test_take_skip_repeat_filter():
    r = tnt.data.Dataset.range(0, 10)
    assert [int(b[0]) for b in r.skip(2).take(3)] == [2, 3, 4]
    assert [int(b[0]) for b in r.take(2).repeat(2)] == [0, 1, 0, 1]
    assert [int(b[0]) for b in r.filter(lambda i: int(i) % 3 == 0)] == [0, 3, 6, 9]
    with pytest.raises(TypeError):
        len(r.repeat())


def test_fashion_mnist():
    if not os.path.isdir(tnt.data.datasets.FASHION_MNIST_DIR):
        pytest.skip("dataset-fashion-mnist is not installed")
    test = tnt.data.datasets.fashion_mnist("test")
    assert len(test) == 10000
    image, label = next(iter(test.batch(5)))
    assert image.shape == (5, 1, 28, 28) and label.dtype == torch.int64


class Squares(torch.utils.data.Dataset):
    """A map-style dataset that records which samples this rank read."""

    def __init__(self, n):
        self.n = n
        self.read = []

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        self.read.append(i)
        return np.array([i, i * i], dtype=np.float32), i


def test_from_python_map_style_reads_only_own_samples(rank, size):
    source = Squares(12)
    ds = _tarantella.dataset_from_python(source, None, 6)
    assert len(ds) == 2
    dist = tnt.data.distribute(ds)
    labels = [b[1].tolist() for b in dist]
    mine = []
    for k in range(2):
        lo, hi = tnt.data.micro_batch_range(6, size, rank)
        mine.append(list(range(6 * k + lo, 6 * k + hi)))
    assert labels == mine
    assert sorted(source.read) == [i for run in mine for i in run], "only this rank's samples"
    x, y = next(iter(dist.iterate(0)))
    assert x.dtype == torch.float32 and y.dtype == torch.int64 and x.shape[1:] == (2,)


def test_from_python_arrays_and_targets():
    x = np.arange(10, dtype=np.float32).reshape(5, 2)
    y = torch.arange(5)
    ds = _tarantella.dataset_from_python((x,), y, 2)
    got = batches(ds)
    assert len(got) == 3 and got[0][1].tolist() == [0, 1] and got[2][0].tolist() == [[8, 9]]
    plain = _tarantella.dataset_from_python(torch.zeros(7, 3), None, None)
    assert len(plain) == 1, "Keras's default batch size 32"


def test_from_python_shuffle_reshuffles_per_epoch_with_seed():
    ds = _tarantella.dataset_from_python(torch.arange(32), None, 32, True, 5)
    e0, e1 = (b[0][0].tolist() for b in (batches(ds, 0), batches(ds, 1)))
    assert sorted(e0) == list(range(32)) and e0 != e1
    again = _tarantella.dataset_from_python(torch.arange(32), None, 32, True, 5)
    assert batches(again, 1)[0][0].tolist() == e1


def test_from_python_tnt_dataset_passes_through():
    ds = tnt.data.Dataset.range(0, 4).batch(2)
    assert _tarantella.dataset_from_python(ds).describe() == ds.describe()
    with pytest.raises(ValueError, match="batch_size must be None"):
        _tarantella.dataset_from_python(ds, None, 2)
    with pytest.raises(ValueError, match="y must be None"):
        _tarantella.dataset_from_python(ds, torch.zeros(4))


def test_from_python_bad_inputs_name_the_fix():
    with pytest.raises(TypeError, match="x is a object"):
        _tarantella.dataset_from_python(object(), None, 2)

    class Pil:
        def __len__(self):
            return 2

        def __getitem__(self, i):
            return object(), 1
    with pytest.raises(tnt.Error, match="ToTensor"):
        batches(_tarantella.dataset_from_python(Pil(), None, 2))


def test_distributed_dataset_share(rank, size):
    ds = tnt.data.Dataset.range(0, 7).batch(7)
    dist = tnt.data.distribute(ds)
    (b,), = batches(dist)
    lo, hi = tnt.data.micro_batch_range(7, size, rank)
    assert b.tolist() == list(range(lo, hi))
    assert dist.share.get() == (hi - lo, 7)


def test_distribute_pins_micro_batches_on_a_gpu(rank, size):
    # pin_memory=True: the same micro-batches, in page-locked memory where
    # there is a GPU (made ahead on a background thread); nothing without.
    x = torch.arange(24, dtype=torch.float32).reshape(12, 2)
    ds = tnt.data.Dataset.from_tensor_slices((x, torch.arange(12))).batch(6)
    plain = [[t.clone() for t in b] for b in tnt.data.distribute(ds)]
    pinned = list(tnt.data.distribute(ds, pin_memory=True))
    assert len(plain) == len(pinned) == 2
    for a, b in zip(plain, pinned):
        assert all(torch.equal(p, q) for p, q in zip(a, b))
        if torch.cuda.is_available() and b[0].numel() > 0:
            assert all(t.is_pinned() for t in b)
    with pytest.raises(TypeError, match="pin_memory"):
        tnt.data.distribute(ds, pin_memory="yes")


def test_python_map_under_prefetch_and_early_stop():
    """The prefetch thread runs the Python map (taking the GIL) while this thread
    waits without it; stopping mid-pass joins that thread without a deadlock."""
    ds = (tnt.data.Dataset.range(0, 64).map(lambda i: i * 3, num_workers=2)
          .batch(4).prefetch(3))
    assert [b[0].tolist() for b in ds][1] == [12, 15, 18, 21]
    for _ in range(5):
        it = iter(ds)
        next(it)
        del it  # mid-pass: the prefetch thread may be inside the Python map


def test_range_takes_pythons_two_forms():
    def values(ds):
        return [int(e[0]) for e in ds]
    assert values(tnt.data.Dataset.range(4)) == [0, 1, 2, 3]
    assert values(tnt.data.Dataset.range(2, 8, 3)) == [2, 5]

