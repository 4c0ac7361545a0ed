"""tnt.nn.SyncBatchNorm and convert_sync_batchnorm at every rank count of
the job: each rank's forward/backward on its micro-batch gives what torch's
BatchNorm gives on the whole global batch in one process (outputs, input
and parameter gradients, running statistics), also with uneven and empty
micro-batches; tnt.Model.fit of a small CNN with BatchNorm gives the weights
of a serial torch loop (on the CPU; the model on its rank's GPU where there
is one, compared on the CPU); a short last batch with an empty micro-batch
does not hang; bad input is a tnt.Error."""
import copy
import io

import pytest
import torch

import tarantella as tnt

TOL = 1e-5


def share(batch, rank, size):
    """Rank's contiguous share of a batch, as the engine and tnt.data split it."""
    base, extra = divmod(batch, size)
    start = rank * base + min(rank, extra)
    return start, base + (1 if rank < extra else 0)


def rel(a, b):
    """On the CPU: a model's state may be on its GPU, the serial loop's is not."""
    a, b = a.detach().cpu(), b.detach().cpu()
    return ((a - b).abs().max() / max(1.0, b.abs().max().item())).item() if a.numel() else 0.0


class Block(torch.nn.Module):
    """A BatchNorm held in an attribute (Python looks it up at every call,
    so the converter can replace it) and one in a Sequential."""

    def __init__(self, dim=2, momentum=0.1):
        super().__init__()
        conv = {1: torch.nn.Conv1d, 2: torch.nn.Conv2d, 3: torch.nn.Conv3d}[dim]
        bn = {1: torch.nn.BatchNorm1d, 2: torch.nn.BatchNorm2d, 3: torch.nn.BatchNorm3d}[dim]
        self.conv = conv(3, 4, 3, padding=1)
        self.bn = bn(4, momentum=momentum)
        self.tail = torch.nn.Sequential(conv(4, 4, 1), bn(4, eps=1e-3, momentum=momentum))

    def forward(self, x):
        return self.tail(torch.relu(self.bn(self.conv(x))))


def check_against_serial(batch, dim=2, momentum=0.1, steps=2, dtype=torch.float64, tol=TOL):
    """float64 by default: the gradient of a bias before BatchNorm is zero
    up to rounding, which float32 puts near 1e-5."""
    torch.manual_seed(3)
    serial = Block(dim, momentum).to(dtype)
    with torch.no_grad():
        for m in serial.modules():
            if isinstance(m, torch.nn.modules.batchnorm._BatchNorm):
                m.weight.uniform_(0.5, 1.5)
                m.bias.uniform_(-0.5, 0.5)
    sync = tnt.nn.convert_sync_batchnorm(copy.deepcopy(serial))
    rank, size = tnt.get_rank(), tnt.get_size()
    start, n = share(batch, rank, size)
    for step in range(steps):
        g = torch.Generator().manual_seed(10 + step)
        x = (torch.randn(batch, 3, *([5] * dim), generator=g) * 2 + 1).to(dtype)
        c = torch.randn(batch, 4, *([5] * dim), generator=g).to(dtype)
        xs = x.clone().requires_grad_()
        ys = serial(xs)
        (ys * c).flatten(1).sum(1).mean().backward()
        xl = x[start:start + n].clone().requires_grad_()
        yl = sync(xl)
        # Each rank's loss is the mean over its own samples (the engine's
        # empty micro-batch backpropagates output.sum()).
        loss = (yl * c[start:start + n]).flatten(1).sum(1)
        (loss.mean() if n else yl.sum()).backward()
        assert rel(yl.detach(), ys.detach()[start:start + n]) < tol
        # Rank r's gradients carry weight n_r / B in the sum over ranks.
        assert rel(xl.grad * n / batch, xs.grad[start:start + n]) < tol
        for (name, p), q in zip(sync.named_parameters(), serial.parameters()):
            grad = tnt.allreduce(p.grad * n / batch)
            assert rel(grad, q.grad) < tol, f"gradient of {name} at step {step}"
            p.grad, q.grad = None, None
        for (name, b), s in zip(sync.named_buffers(), serial.buffers()):
            assert rel(b.double(), s.double()) < tol, f"buffer {name} at step {step}"
    return serial, sync


@pytest.mark.parametrize("batch", [10, 7, 2])
def test_forward_backward_and_running_stats_equal_serial_batchnorm(batch):
    check_against_serial(batch)   # 2 at 3 or 4 ranks: ranks without samples


@pytest.mark.parametrize("dim", [1, 3])
def test_1d_and_3d_and_cumulative_momentum(dim):
    check_against_serial(9, dim=dim, momentum=None)


def test_float32():
    check_against_serial(10, dtype=torch.float32, tol=1e-4)


def test_evaluation_uses_running_stats_without_communicating():
    serial, sync = check_against_serial(8)
    serial.eval()
    sync.eval()
    x = torch.randn(3, 3, 5, 5, dtype=torch.float64)
    if tnt.get_rank() == 0:   # alone: a collective here would time out
        assert rel(sync(x), serial(x)) < TOL
    tnt.barrier()


def test_convert_keeps_settings_tensors_and_mode():
    net = torch.nn.Sequential(torch.nn.Linear(4, 6), torch.nn.BatchNorm1d(6, eps=1e-3, momentum=0.3),
                              torch.nn.Sequential(torch.nn.BatchNorm1d(6, affine=False,
                                                                       track_running_stats=False)))
    net.eval()
    weight, mean = net[1].weight, net[1].running_mean
    out = tnt.nn.convert_sync_batchnorm(net)
    assert out is net
    bn, inner = net[1], net[2][0]
    assert isinstance(bn, tnt.nn.SyncBatchNorm) and isinstance(inner, tnt.nn.SyncBatchNorm)
    assert bn.weight is weight and bn.running_mean is mean
    assert (bn.eps, bn.momentum, bn.affine, bn.track_running_stats) == (1e-3, 0.3, True, True)
    assert (inner.affine, inner.track_running_stats, inner.weight) == (False, False, None)
    assert not bn.training and not inner.training
    assert list(net.state_dict()) == ["0.weight", "0.bias", "1.weight", "1.bias",
                                      "1.running_mean", "1.running_var", "1.num_batches_tracked"]
    single = tnt.nn.convert_sync_batchnorm(torch.nn.BatchNorm2d(3), group=tnt.world())
    assert isinstance(single, tnt.nn.SyncBatchNorm)
    assert copy.deepcopy(single).process_group == tnt.world()   # a given group is kept
    buffer = io.BytesIO()
    torch.save(single, buffer)                   # pickles carry no group (one job's)
    buffer.seek(0)
    assert torch.load(buffer, weights_only=False).process_group is None  # a whole module


def test_the_model_gives_its_group_and_a_given_group_is_kept():
    world = tnt.world()
    pair = world.subgroup([0, 1]) if world.size > 1 else world
    net = tnt.nn.convert_sync_batchnorm(torch.nn.Sequential(
        torch.nn.Linear(4, 4), torch.nn.BatchNorm1d(4), torch.nn.BatchNorm1d(4)))
    net[2].set_process_group(world)
    assert net[1].process_group is None
    if pair.is_member:
        tnt.Model(net, group=pair)
        assert net[1].process_group == pair
        assert net[2].process_group == world


class Cnn(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.features = torch.nn.Sequential(
            torch.nn.Conv2d(1, 4, 3), torch.nn.BatchNorm2d(4), torch.nn.ReLU(),
            torch.nn.Conv2d(4, 4, 3), torch.nn.BatchNorm2d(4), torch.nn.ReLU())
        self.fc = torch.nn.Linear(4 * 4 * 4, 3)
        self.bn = torch.nn.BatchNorm1d(3)

    def forward(self, x):
        return self.bn(self.fc(self.features(x).flatten(1)))


def data(n):
    g = torch.Generator().manual_seed(0)
    return torch.randn(n, 1, 8, 8, generator=g), torch.randint(0, 3, (n,), generator=g)


def serial_fit(net, x, y, batch, epochs):
    opt = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.5)
    for _ in range(epochs):
        for start in range(0, len(y), batch):
            opt.zero_grad()
            torch.nn.functional.cross_entropy(net(x[start:start + batch]),
                                              y[start:start + batch]).backward()
            opt.step()
    return net


@pytest.mark.parametrize("n, batch", [(40, 16), (10, 4)])
def test_fit_gives_the_weights_of_serial_batchnorm(n, batch):
    """(40, 16): uneven last batch of 8; (10, 4): at 3 ranks the last batch
    of 2 leaves rank 2 without samples, which must still join (no hang)."""
    x, y = data(n)
    torch.manual_seed(5)
    reference = serial_fit(Cnn(), x, y, batch, epochs=2)
    torch.manual_seed(5)
    net = tnt.nn.convert_sync_batchnorm(Cnn())
    model = tnt.Model(net)
    model.compile(optimizer=torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.5),
                  loss=torch.nn.CrossEntropyLoss())
    model.fit(x, y, batch_size=batch, epochs=2, shuffle=False, verbose=0)
    for (name, a), b in zip(net.state_dict().items(), reference.state_dict().values()):
        assert rel(a.double(), b.double()) < 1e-4, name
    loss = model.evaluate(x, y, batch_size=batch)
    expected = torch.nn.functional.cross_entropy(reference.eval()(x), y).item()
    assert abs(loss - expected) < 1e-4


def test_fit_on_a_process_set_normalizes_over_that_set():
    """At 3+ ranks a model on ranks {0, 1}: its layers take the pair (the
    world would leave the pair waiting for ranks that never come)."""
    world = tnt.world()
    if world.size < 3:
        pytest.skip("needs a rank outside the pair")
    pair = world.subgroup([0, 1])
    if not pair.is_member:
        return
    x, y = data(12)
    torch.manual_seed(5)
    reference = serial_fit(Cnn(), x, y, 4, epochs=1)
    torch.manual_seed(5)
    net = tnt.nn.convert_sync_batchnorm(Cnn())
    model = tnt.Model(net, group=pair)
    model.compile(optimizer=torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.5),
                  loss=torch.nn.CrossEntropyLoss())
    model.fit(x, y, batch_size=4, epochs=1, shuffle=False, verbose=0)
    assert net.bn.process_group == pair
    for (name, a), b in zip(net.state_dict().items(), reference.state_dict().values()):
        assert rel(a.double(), b.double()) < 1e-4, name


def test_own_loop_with_distributed_optimizer_uses_the_world():
    """No tnt.Model: the layers normalize over the world; a rank with an
    empty batch (10 samples, batch 4, 3+ ranks) runs forward and
    backward of output.sum(), as docs/python.md says."""
    x, y = data(10)
    torch.manual_seed(5)
    reference = serial_fit(Cnn(), x, y, 4, epochs=1)
    torch.manual_seed(5)
    net = tnt.nn.convert_sync_batchnorm(Cnn())
    loader = tnt.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=4)
    opt = tnt.DistributedOptimizer(torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.5),
                                   named_parameters=net.named_parameters(), loader=loader)
    for xb, yb in loader:
        opt.zero_grad()
        out = net(xb)
        (torch.nn.functional.cross_entropy(out, yb) if len(yb) else out.sum()).backward()
        opt.step()
    for (name, a), b in zip(net.state_dict().items(), reference.state_dict().values()):
        assert rel(a.double(), b.double()) < 1e-4, name


def test_bad_input_is_an_error_with_the_fix():
    with pytest.raises(TypeError, match="module must be a torch.nn.Module, got a str"):
        tnt.nn.convert_sync_batchnorm("resnet")
    with pytest.raises(TypeError, match="group must be a tnt.ProcessGroup.*got a int"):
        tnt.nn.convert_sync_batchnorm(torch.nn.BatchNorm1d(2), group=3)
    with pytest.raises(tnt.Error, match="num_features > 0, got 0"):
        tnt.nn.SyncBatchNorm(0)
    with pytest.raises(tnt.Error, match="eps > 0"):
        tnt.nn.SyncBatchNorm(2, eps=0)
    with pytest.raises(tnt.Error, match=r"needs inputs \[batch, 4, ...\], got \[2, 3\]"):
        tnt.nn.SyncBatchNorm(4).eval()(torch.zeros(2, 3))
    with pytest.raises(ValueError, match="has not seen an input yet"):
        tnt.nn.convert_sync_batchnorm(torch.nn.Sequential(torch.nn.LazyBatchNorm1d()))
