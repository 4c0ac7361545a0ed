"""tnt.DistributedOptimizer: the C++ hooks and buckets under a Python loop give the
weights of a serial torch loop over the same global batches."""
import copy
import warnings

import pytest
import torch
import torch.nn.functional as F

import tarantella as tnt


def make_model(seed):
    torch.manual_seed(seed)
    return torch.nn.Sequential(
        torch.nn.Conv2d(1, 4, 3), torch.nn.ReLU(), torch.nn.Flatten(),
        torch.nn.Linear(4 * 6 * 6, 16), torch.nn.Tanh(), torch.nn.Linear(16, 5))


class Data(torch.utils.data.Dataset):
    def __init__(self, n=200):
        g = torch.Generator().manual_seed(0)
        self.x = torch.randn(n, 1, 8, 8, generator=g)
        self.y = torch.randint(0, 5, (n,), generator=g)

    def __len__(self):
        return len(self.y)

    def __getitem__(self, i):
        return self.x[i], self.y[i]


OPTIMIZERS = {
    "sgd_momentum": lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9),
    "adam": lambda p: torch.optim.Adam(p, lr=0.01),
}


def serial_weights(make_opt, steps, batch, data):
    model = make_model(1)
    opt = make_opt(model.parameters())
    loader = torch.utils.data.DataLoader(data, batch_size=batch)
    scheduler = torch.optim.lr_scheduler.StepLR(opt, step_size=10, gamma=0.5)
    done = 0
    while done < steps:
        for x, y in loader:
            opt.zero_grad()
            F.cross_entropy(model(x), y).backward()
            opt.step()
            scheduler.step()
            done += 1
            if done == steps:
                break
    return model.state_dict()


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
@pytest.mark.parametrize("given", [True, False], ids=["loader=", "without_loader"])
def test_thirty_steps_match_a_serial_loop(name, given, rank):
    # 10 samples over 3 ranks: 4, 3, 3. Without loader= the optimizer takes
    # each step's shares from the tnt loader that handed out the batch: as
    # exact, and without the 1/N warning.
    data, batch, steps = Data(), 10, 30
    model = make_model(1 + rank)  # different on every rank: the broadcast must fix it
    opt = OPTIMIZERS[name](model.parameters())
    loader = tnt.data.DataLoader(data, batch_size=batch)
    dopt = tnt.DistributedOptimizer(opt, named_parameters=model.named_parameters(),
                                    loader=loader if given else None)
    scheduler = torch.optim.lr_scheduler.StepLR(dopt, step_size=10, gamma=0.5)
    done = 0
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "weighs 1/N" warning
        while done < steps:
            for x, y in loader:
                dopt.zero_grad()
                F.cross_entropy(model(x), y).backward()
                dopt.step()
                scheduler.step()
                done += 1
                if done == steps:
                    break
    expected = serial_weights(OPTIMIZERS[name], steps, batch, data)
    for key, value in model.state_dict().items():
        torch.testing.assert_close(value, expected[key], rtol=1e-5, atol=1e-6,
                                   msg=lambda m: f"{key} after {steps} steps: {m}")
    assert dopt.param_groups[0]["lr"] == opt.param_groups[0]["lr"]


def test_zero_grad_drops_a_backward_that_is_not_to_count(rank):
    # After each step a backward that does not count (a GAN's generator loss
    # through the discriminator; its buckets may leave at once): zero_grad()
    # drops it, as torch's does. It used to be summed into the next step at
    # 2 ranks and more.
    data, batch, steps = Data(40), 10, 8

    def run(make_loop_opt, model):
        opt = make_loop_opt(model)
        loader = (tnt.data.DataLoader(data, batch_size=batch) if make_loop_opt is distributed
                  else torch.utils.data.DataLoader(data, batch_size=batch))
        done = 0
        while done < steps:
            for x, y in loader:
                opt.zero_grad()
                F.cross_entropy(model(x), y).backward()
                opt.step()
                (model(x).sum() * 100).backward()  # not to count
                done += 1
        return model.state_dict()

    def distributed(model):
        return tnt.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9),
                                        named_parameters=model.named_parameters())

    def serial(model):
        return torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)

    got = run(distributed, make_model(1 + rank))
    expected = run(serial, make_model(1))
    for key, value in got.items():
        torch.testing.assert_close(value, expected[key], rtol=1e-5, atol=1e-6,
                                   msg=lambda m: f"{key}: {m}")


def test_a_step_skipped_after_synchronize_leaves_the_next_one_summed(rank):
    # A loop that looks at the summed gradients and skips the step (a norm
    # that is not finite, say): synchronize(), then zero_grad() and no
    # step(). The next step's gradients used to stay this rank's own (the
    # hooks were not re-armed), and the ranks drifted apart silently.
    data, batch = Data(40), 10

    def run(model, opt, loader, synchronize):
        for i, (x, y) in enumerate(list(loader) * 2):
            opt.zero_grad()
            F.cross_entropy(model(x), y).backward()
            synchronize()
            if i % 3 == 1:  # skipped
                opt.zero_grad()
                continue
            opt.step()
        return model.state_dict()

    model = make_model(1 + rank)
    dopt = tnt.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9),
                                    named_parameters=model.named_parameters())
    got = run(model, dopt, tnt.data.DataLoader(data, batch_size=batch), dopt.synchronize)
    plain = make_model(1)
    expected = run(plain, torch.optim.SGD(plain.parameters(), lr=0.05, momentum=0.9),
                   torch.utils.data.DataLoader(data, batch_size=batch), lambda: None)
    for key, value in got.items():
        torch.testing.assert_close(value, expected[key], rtol=1e-5, atol=1e-6,
                                   msg=lambda m: f"{key}: {m}")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")
def test_a_model_moved_to_the_gpu_after_wrapping_trains_there(rank):
    # The buckets follow the parameters, at the first gradient after the
    # move (it used to fail at 2 ranks with torch's "expected all tensors on
    # the same device"); zero_grad() after the step here, not before.
    data = Data(40)
    model = make_model(1 + rank)
    dopt = tnt.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.05),
                                    named_parameters=model.named_parameters())
    model.cuda()
    for x, y in tnt.data.DataLoader(data, batch_size=10):
        F.cross_entropy(model(x.cuda()), y.cuda()).backward()
        dopt.step()
        dopt.zero_grad()
    plain = make_model(1).cuda()
    sgd = torch.optim.SGD(plain.parameters(), lr=0.05)
    for x, y in torch.utils.data.DataLoader(data, batch_size=10):
        sgd.zero_grad()
        F.cross_entropy(plain(x.cuda()), y.cuda()).backward()
        sgd.step()
    for a, b in zip(model.parameters(), plain.parameters()):
        assert a.device.type == "cuda"
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")
def test_a_rank_without_samples_after_a_move_sends_the_moved_buckets(rank, size):
    # 41 samples in global batches of 20: the last batch's one sample is
    # rank 0's, and the other ranks skip backward. The model moves to the
    # GPU just before it: on those ranks the first step after the move has
    # no gradient to move the buckets, and step() moves them (else they sent
    # the old CPU buckets against rank 0's GPU ones).
    if size < 2:
        pytest.skip("needs 2 ranks")
    data = Data(41)

    def run(model, opt, batches):
        for i, (x, y) in enumerate(batches):
            if i == 2:
                model.cuda()
            device = next(model.parameters()).device
            opt.zero_grad()
            if len(x) > 0:
                F.cross_entropy(model(x.to(device)), y.to(device)).backward()
            opt.step()
        return model

    model = make_model(1 + rank)
    dopt = tnt.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.05),
                                    named_parameters=model.named_parameters())
    got = run(model, dopt, tnt.data.DataLoader(data, batch_size=20))
    plain = make_model(1)
    expected = run(plain, torch.optim.SGD(plain.parameters(), lr=0.05),
                   torch.utils.data.DataLoader(data, batch_size=20))
    for a, b in zip(got.parameters(), expected.parameters()):
        assert a.device.type == "cuda"
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)


def test_a_parameter_unfrozen_after_wrapping_is_refused():
    # It has no hook: its gradient would be this rank's alone.
    model = make_model(1)
    model[0].weight.requires_grad_(False)
    dopt = tnt.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1))
    model[0].weight.requires_grad_(True)
    dopt.zero_grad()
    F.cross_entropy(model(torch.randn(4, 1, 8, 8)), torch.tensor([0, 1, 2, 3])).backward()
    with pytest.raises(tnt.Error, match="did not require one when the optimizer was wrapped"):
        dopt.step()


def test_initial_state_is_rank_zeros(rank, size):
    model = make_model(100 + rank)
    opt = torch.optim.Adam(model.parameters(), lr=0.001 * (rank + 1))
    # Give every rank its own Adam moments before wrapping.
    F.cross_entropy(model(torch.randn(3, 1, 8, 8) + rank), torch.tensor([0, 1, 2])).backward()
    opt.step()
    tnt.DistributedOptimizer(opt)
    state = [opt.state[p]["exp_avg"] for p in model.parameters()]
    for t in list(model.parameters()) + state:
        everyone = tnt.allgather(t.detach().reshape(1, -1))
        assert all(torch.equal(row, everyone[0]) for row in everyone)
    assert opt.param_groups[0]["lr"] == pytest.approx(0.001)


def test_without_any_tnt_loader_weights_are_one_over_n_with_one_warning(rank, size):
    torch.manual_seed(0)
    w = torch.nn.Parameter(torch.zeros(3))
    opt = tnt.DistributedOptimizer(torch.optim.SGD([w], lr=1.0))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(2):
            opt.zero_grad()
            (w * float(rank + 1)).sum().backward()
            opt.step()
    mean = sum(r + 1 for r in range(size)) / size
    assert torch.allclose(w.detach(), torch.full((3,), -2 * mean))
    messages = [str(c.message) for c in caught if issubclass(c.category, UserWarning)]
    if size == 1:
        assert messages == []  # 1/1 is exact
    else:
        assert len(messages) == 1, messages  # once, at the first step
        assert f"weighs 1/{size}" in messages[0] and "tnt.data.DataLoader" in messages[0]


def test_a_plain_torch_loader_weighs_one_over_n(rank, size):
    # A plain torch loader (here one that hands every rank the whole batch,
    # so 1/N is right): the tnt loaders of other tests do not leak into it.
    tnt.data.DataLoader(Data(), batch_size=10).__iter__().__next__()
    model = make_model(1)
    dopt = tnt.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1))
    plain = make_model(1)
    sgd = torch.optim.SGD(plain.parameters(), lr=0.1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for x, y in torch.utils.data.DataLoader(Data(40), batch_size=10):
            for net, opt in ((model, dopt), (plain, sgd)):
                opt.zero_grad()
                F.cross_entropy(net(x), y).backward()
                opt.step()
    for a, b in zip(model.parameters(), plain.parameters()):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)


def test_grad_holds_the_global_gradient_before_the_inner_step(rank, size):
    w = torch.nn.Parameter(torch.ones(2))
    opt = tnt.DistributedOptimizer(torch.optim.SGD([w], lr=0.0))
    opt.zero_grad()
    (w * float(rank)).sum().backward()
    opt.synchronize()
    assert w.grad.tolist() == [sum(range(size)) / size] * 2
    opt.step()
    assert w.tolist() == [1.0, 1.0]


def grad_scaler_or_skip(device="cpu"):
    if not hasattr(torch, "amp") or not hasattr(torch.amp, "GradScaler"):
        pytest.skip("torch.amp.GradScaler needs torch 2.3 or newer")
    return torch.amp.GradScaler(device, init_scale=1024.0)


# The scaler's own loop on the CPU, and on the GPU where there is one
# (parameters on the rank's GPU, GradScaler("cuda"): its fused
# check-and-unscale on the gradients summed over the ranks).
DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


def scaled_step(opt, scaler, loss):
    opt.zero_grad()
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()


@pytest.mark.parametrize("device", DEVICES)
def test_grad_scaler_steps_on_the_unscaled_sums(rank, size, device):
    """scaler.step(optimizer) unscales the gradients summed over the ranks:
    the update is the unscaled mean gradient's, as without the scaler."""
    scaler = grad_scaler_or_skip(device)
    w = torch.nn.Parameter(torch.zeros(3, device=device))
    opt = tnt.DistributedOptimizer(torch.optim.SGD([w], lr=1.0))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # 1/N weights (no tnt loader); GradScaler's FutureWarning
        scaled_step(opt, scaler, (w * float(rank + 1)).sum())
    mean = sum(r + 1 for r in range(size)) / size
    assert torch.allclose(w.detach().cpu(), torch.full((3,), -mean)), w
    assert scaler.get_scale() == 1024.0


@pytest.mark.parametrize("device", DEVICES)
def test_grad_scaler_skips_on_every_rank_when_one_rank_overflows(rank, size, device):
    scaler = grad_scaler_or_skip(device)
    w = torch.nn.Parameter(torch.zeros(3, device=device))
    opt = tnt.DistributedOptimizer(torch.optim.SGD([w], lr=1.0))
    factor = float("inf") if rank == size - 1 else 1.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        scaled_step(opt, scaler, (w * factor).sum())
        assert torch.equal(w.detach().cpu(), torch.zeros(3)), "the step is skipped on every rank"
        assert scaler.get_scale() == 512.0, "every rank backs off alike"
        scaled_step(opt, scaler, (w * 2.0).sum())  # the next step runs, on every rank
    assert torch.allclose(w.detach().cpu(), torch.full((3,), -2.0))


def test_grad_scaler_unscale_for_clipping_after_synchronize(rank, size):
    scaler = grad_scaler_or_skip()
    w = torch.nn.Parameter(torch.zeros(3))
    opt = tnt.DistributedOptimizer(torch.optim.SGD([w], lr=1.0))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        opt.zero_grad()
        scaler.scale((w * 3.0).sum()).backward()
        opt.synchronize()
        scaler.unscale_(opt)
        torch.nn.utils.clip_grad_norm_([w], max_norm=1.0)
        scaler.step(opt)
        scaler.update()
        assert torch.allclose(w.detach(), torch.full((3,), -1.0 / 3 ** 0.5), atol=1e-6), w
        after_first = w.detach().clone()
        # unscale_ before the sums unscales this rank's gradients only, which
        # the sums (still scaled) replace: refused, nothing stepped, whether
        # step() comes right away or after an explicit synchronize().
        for explicit_synchronize in (False, True):
            opt.zero_grad()
            scaler.scale((w * 3.0).sum()).backward()
            scaler.unscale_(opt)
            if explicit_synchronize:
                opt.synchronize()
            with pytest.raises(RuntimeError, match="call optimizer.synchronize.. first"):
                scaler.step(opt)
            assert torch.equal(w.detach(), after_first), "a refused step changes nothing"
            scaler.update()
        # and the next step, in the right order, runs as usual on every rank
        opt.zero_grad()
        scaler.scale((w * 3.0).sum()).backward()
        opt.synchronize()
        scaler.unscale_(opt)
        scaler.step(opt)
        scaler.update()
        assert torch.allclose(w.detach(), after_first - 3.0), w


def test_closure_and_wrong_types_are_refused():
    w = torch.nn.Parameter(torch.ones(1))
    opt = tnt.DistributedOptimizer(torch.optim.SGD([w], lr=0.1))
    with pytest.raises(TypeError, match="takes no closure"):
        opt.step(lambda: 0.0)
    with pytest.raises(TypeError, match="torch.optim.Optimizer"):
        tnt.DistributedOptimizer(object())
    with pytest.raises(TypeError, match="loader="):
        tnt.DistributedOptimizer(torch.optim.SGD([torch.nn.Parameter(torch.ones(1))], lr=0.1),
                                 loader=[1, 2])
