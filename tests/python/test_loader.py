"""tnt.data.DataLoader: each rank's share of every global batch, exactly."""
import pytest
import torch

import tarantella as tnt


class Indexed(torch.utils.data.Dataset):
    """Sample i is (features, i): the label tells which sample a rank got."""

    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return torch.full((2,), float(i)), i


def gathered_batches(loader):
    """Every rank's batches, gathered: per step, the concatenation in rank order."""
    out = []
    for x, y in loader:
        local, global_size = loader.share.get()
        assert y.shape[0] == local and x.shape == (local, 2)
        assert torch.equal(x[:, 0], y.float())
        out.append((tnt.allgather(y).tolist(), global_size))
    return out


@pytest.mark.parametrize("n, batch, drop_last", [(23, 8, False), (23, 8, True), (10, 4, False)])
def test_union_of_shares_is_the_global_batch_in_order(n, batch, drop_last, rank, size):
    if batch < size:
        pytest.skip("batch smaller than the rank count")
    loader = tnt.data.DataLoader(Indexed(n), batch_size=batch, drop_last=drop_last)
    got = gathered_batches(loader)
    expected = [list(range(f, min(f + batch, n))) for f in range(0, n, batch)]
    if drop_last:
        expected = [b for b in expected if len(b) == batch]
    assert [g for g, _ in got] == expected
    assert [s for _, s in got] == [len(b) for b in expected]
    assert len(loader) == len(expected)


def test_micro_batch_rule_sizes(rank, size):
    loader = tnt.data.DataLoader(Indexed(10), batch_size=10)
    (x, y), = list(loader)
    lo, hi = tnt.data.micro_batch_range(10, size, rank)
    assert hi - lo == 10 // size + (1 if rank < 10 % size else 0)
    assert y.tolist() == list(range(lo, hi))


def test_short_last_batch_leaves_empty_shares(rank, size):
    if size < 2:
        pytest.skip("needs two ranks")
    n = size + 1  # the last batch holds 1 sample
    loader = tnt.data.DataLoader(Indexed(n), batch_size=size)
    batches = list(loader)
    x, y = batches[-1]
    assert y.shape[0] == (1 if rank == 0 else 0)
    assert x.shape[1:] == (2,) and y.dtype == torch.int64
    assert loader.share.get() == (y.shape[0], 1)


def test_seeded_shuffle_same_on_every_rank_new_each_epoch():
    loader = tnt.data.DataLoader(Indexed(20), batch_size=5, shuffle=True, seed=3)
    e0 = [i for g, _ in gathered_batches(loader) for i in g]
    e1 = [i for g, _ in gathered_batches(loader) for i in g]
    assert sorted(e0) == list(range(20)) and e0 != e1
    again = tnt.data.DataLoader(Indexed(20), batch_size=5, shuffle=True, seed=3)
    assert [i for g, _ in gathered_batches(again) for i in g] == e0


def test_unseeded_shuffle_is_torchs_order(rank):
    torch.manual_seed(11 + rank)  # rank 0's draw is broadcast
    loader = tnt.data.DataLoader(Indexed(16), batch_size=4, shuffle=True)
    got = [i for g, _ in gathered_batches(loader) for i in g]
    torch.manual_seed(11)
    reference = torch.utils.data.DataLoader(Indexed(16), batch_size=4, shuffle=True)
    assert got == [i for _, y in reference for i in y.tolist()]


def test_workers_give_the_same_batches():
    plain = gathered_batches(tnt.data.DataLoader(Indexed(17), batch_size=6))
    workers = gathered_batches(tnt.data.DataLoader(Indexed(17), batch_size=6, num_workers=2))
    assert plain == workers


def test_batch_smaller_than_ranks_is_an_error(size):
    if size < 2:
        pytest.skip("needs two ranks")
    with pytest.raises(tnt.Error, match=f"global batch size 1 is smaller than the number of ranks {size}"):
        tnt.data.DataLoader(Indexed(4), batch_size=1)
