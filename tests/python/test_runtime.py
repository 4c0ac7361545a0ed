"""Runtime, ranks, groups and the user collectives."""
import importlib
import os

import pytest
import torch

import tarantella as tnt


def test_rank_and_size_match_the_job(rank, size):
    assert size == int(os.environ.get("OMPI_COMM_WORLD_SIZE", "1"))
    assert rank == int(os.environ.get("OMPI_COMM_WORLD_RANK", "0"))
    assert 0 <= rank < size
    assert tnt.get_master_rank() == 0
    assert tnt.is_master_rank() == (rank == 0)
    assert 0 <= tnt.get_local_rank() < tnt.get_local_size()
    assert tnt.is_initialized()


def test_init_and_import_are_idempotent(rank):
    tnt.init()
    tnt.init()
    again = importlib.import_module("tarantella")
    assert again is tnt
    assert tnt.get_rank() == rank


def test_world_group(rank, size):
    w = tnt.world()
    assert isinstance(w, tnt.ProcessGroup)
    assert (w.rank, w.size, w.is_member, w.is_master) == (rank, size, True, rank == 0)
    assert w.world_ranks == list(range(size))
    assert "group of" in repr(w)


def test_subgroup_membership(rank, size):
    last_first = tnt.world().subgroup([size - 1, 0] if size > 1 else [0])
    if rank in (0, size - 1):
        assert last_first.is_member
        assert last_first.rank == (0 if rank == size - 1 else 1 if size > 1 else 0)
        assert last_first.size == min(size, 2)
        assert last_first.is_master == (rank == size - 1)
        assert last_first.world_ranks == ([size - 1, 0] if size > 1 else [0])
        total = tnt.allreduce(torch.tensor([float(rank)]), group=last_first)
        assert total.item() == float(size - 1)
    else:
        assert not last_first.is_member
        assert last_first.rank == -1


def test_split_by_parity(rank, size):
    half = tnt.world().split(rank % 2)
    assert half.size == len(range(rank % 2, size, 2))
    assert half.world_ranks == list(range(rank % 2, size, 2))


def test_allreduce_broadcast_allgather(rank, size):
    t = torch.full((3,), float(rank + 1))
    assert tnt.allreduce(t) is t
    assert torch.equal(t, torch.full((3,), float(size * (size + 1) // 2)))
    m = tnt.allreduce(torch.tensor([rank]), op="max")
    assert m.item() == size - 1
    b = tnt.broadcast(torch.tensor([rank * 10.0, 1.0]), root=size - 1)
    assert b.tolist() == [(size - 1) * 10.0, 1.0]
    strided = torch.arange(6.0).reshape(2, 3).t()  # not contiguous
    tnt.allreduce(strided)
    assert torch.equal(strided, torch.arange(6.0).reshape(2, 3).t() * size)
    g = tnt.allgather(torch.full((rank + 1,), rank))
    assert g.tolist() == [r for r in range(size) for _ in range(r + 1)]


def test_collectives_on_the_gpu(rank, size):
    """CUDA tensors through the Python collectives: NCCL at 1 rank, the
    host-staged path with ranks sharing a GPU. Results stay on the tensor's
    device. Without a GPU there is nothing to check."""
    if not torch.cuda.is_available():
        pytest.skip("no GPU")
    t = torch.full((3,), float(rank + 1), device="cuda")
    assert tnt.allreduce(t) is t
    assert t.device.type == "cuda"
    assert t.tolist() == [float(size * (size + 1) // 2)] * 3
    m = tnt.allreduce(torch.tensor([rank], device="cuda"), op="max")
    assert m.device.type == "cuda" and m.item() == size - 1
    b = tnt.broadcast(torch.tensor([rank * 10.0, 1.0], device="cuda"), root=size - 1)
    assert b.device.type == "cuda" and b.tolist() == [(size - 1) * 10.0, 1.0]
    g = tnt.allgather(torch.full((rank + 1,), rank, device="cuda"))
    assert g.tolist() == [r for r in range(size) for _ in range(r + 1)]


def test_sum_over_ranks_keeps_types(rank, size):
    correct, total, loss = tnt.sum_over_ranks((rank + 1, 10, 0.5))
    assert (correct, total) == (size * (size + 1) // 2, 10 * size)
    assert isinstance(correct, int) and isinstance(loss, float)
    assert loss == 0.5 * size
    t = torch.tensor([1.0, rank])
    s = tnt.sum_over_ranks(t)
    assert s is not t and t.tolist() == [1.0, rank]
    assert s.tolist() == [size, size * (size - 1) / 2]
    assert tnt.sum_over_ranks(3) == 3 * size


def test_broadcast_object(rank):
    got = tnt.broadcast_object({"rank": rank, "t": torch.tensor([rank])})
    assert got["rank"] == 0 and got["t"].tolist() == [0]


def test_broadcast_object_tensors_arrive_on_the_cpu(rank):
    """Root's GPU tensor is another rank's GPU (or none): the others get it on
    the CPU. Without a GPU, the root's tensor is on the CPU and this checks
    the values only."""
    sent = torch.arange(3.0)
    if torch.cuda.is_available():
        sent = sent.cuda()
    got = tnt.broadcast_object([sent])[0]
    assert got.tolist() == [0.0, 1.0, 2.0]
    if rank != 0:
        assert got.device.type == "cpu"


def test_the_rank_s_gpu_is_the_current_device():
    """After tnt.init, "cuda" means this rank's GPU (the one the engine picks),
    not GPU 0 on every rank. Without a GPU there is nothing to check."""
    if not torch.cuda.is_available():
        pytest.skip("no GPU")
    assert torch.cuda.current_device() == tnt.get_local_rank() % torch.cuda.device_count()


def test_set_seed_repeats_torch_draws():
    tnt.set_seed(123, deterministic=False)
    a = torch.rand(4)
    tnt.set_seed(123, deterministic=False)
    assert torch.equal(a, torch.rand(4))
    torch.manual_seed(123)
    assert torch.equal(a, torch.rand(4)), "tnt.set_seed seeds torch's own generator"
    same = tnt.allgather(a.unsqueeze(0))
    assert all(torch.equal(row, a) for row in same)
