"""Pipeline stages in Python: tnt.Model(net, pipeline_stages=P) trains a
torch.nn.Sequential as plain serial PyTorch does. At every layout the job's
size allows (P = 2, 3 or 4 dividing it), after one epoch the weights, the
loss evaluate gives and predict's outputs are within 1e-5 of a plain torch
loop on one process; each rank holds its stage's parameters and only those;
deterministic mode gives the bits of one rank without stages; and the
mistakes a user can make are named. Run as python.pipeline.nN."""
import pytest
import torch

import tarantella as tnt


def make_net(split_point):
    torch.manual_seed(7)
    layers = [torch.nn.Linear(6, 24), torch.nn.ReLU(), torch.nn.Linear(24, 24)]
    if split_point:
        layers.append(tnt.nn.SplitPoint())
    layers += [torch.nn.Tanh(), torch.nn.Linear(24, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4)]
    return torch.nn.Sequential(*layers)


def samples():
    g = torch.Generator().manual_seed(5)
    return torch.randn(40, 6, generator=g), torch.randint(0, 4, (40,), generator=g)


def serial(split_point):
    """Plain PyTorch, one process: the same batches of 16 in order (the
    SplitPoint, an identity here, only shifts the names after it)."""
    net = make_net(split_point)
    x, y = samples()
    opt = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.5)
    loss_fn = torch.nn.CrossEntropyLoss()
    for start in range(0, 40, 16):
        opt.zero_grad()
        loss_fn(net(x[start:start + 16]), y[start:start + 16]).backward()
        opt.step()
    with torch.no_grad():
        out = net(x)
    return dict(net.state_dict()), loss_fn(out, y).item(), out


def relative(a, b):
    """Worst difference relative to a's largest value, on the CPU in float64:
    a pipeline stage may train on a GPU, the serial reference on the CPU."""
    a, b = a.detach().cpu().double(), b.detach().cpu().double()
    return ((a - b).abs().max() / max(a.abs().max().item(), 1e-12)).item()


def stage_layouts(size):
    return [p for p in (2, 3, 4) if size % p == 0]


def test_every_layout_trains_as_serial_pytorch(size, rank, tmp_path_factory):
    if not stage_layouts(size):
        pytest.skip(f"no pipeline layout for {size} ranks")
    for p in stage_layouts(size):
        net = make_net(split_point=p == 2)  # P = 2 at the SplitPoint, else by parameter count
        weights, loss, outputs = serial(split_point=p == 2)
        model = tnt.Model(net, pipeline_stages=p, micro_batches=4)
        model.compile(optimizer=torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.5),
                      loss=torch.nn.CrossEntropyLoss())
        x, y = samples()
        model.fit((x, y), batch_size=16, epochs=1, shuffle=False, verbose=0)
        assert model.pipeline == tnt.PipelinePosition(rank % p, p, rank // p, size // p)
        mine = model._impl.trained_module.state_dict()
        assert mine and set(mine) < set(weights)
        for name, w in mine.items():
            assert relative(weights[name], w) < 1e-5, f"P={p}: {name}"
        got = model.evaluate((x, y), batch_size=16, verbose=0)
        assert got == pytest.approx(loss, rel=1e-5), f"P={p}"
        predicted = model.predict(x, batch_size=16)
        assert relative(outputs, predicted) < 1e-5, f"P={p}"
        # The whole model's state_dict, written by the master: plain torch reads it.
        path = tnt.broadcast_object(str(tmp_path_factory.mktemp("stages") / "weights.pt"))
        model.save_weights(path)
        if tnt.is_master_rank():
            saved = torch.load(path)
            assert list(saved) == list(weights), f"P={p}"
            for name, w in saved.items():
                assert relative(weights[name], w) < 1e-5, f"P={p}: {name}"


def make_random_net(split_point):
    """Dropout before and after every cut, BatchNorm's running statistics."""
    torch.manual_seed(7)
    layers = [torch.nn.Linear(6, 24), torch.nn.ReLU(), torch.nn.Dropout(0.25),
              torch.nn.Linear(24, 24)]
    if split_point:
        layers.append(tnt.nn.SplitPoint())
    layers += [torch.nn.BatchNorm1d(24), torch.nn.Tanh(), torch.nn.Linear(24, 16),
               torch.nn.ReLU(), torch.nn.Dropout(0.25), torch.nn.Linear(16, 4)]
    return torch.nn.Sequential(*layers)


def test_deterministic_every_layout_is_bitwise_one_rank(size, rank):
    """deterministic=4: at every layout the bits of the whole model trained
    alone on one rank, weights, buffers, evaluate's loss and predict's
    outputs (a chunk's random stream travels with its activations)."""
    if not stage_layouts(size):
        pytest.skip(f"no pipeline layout for {size} ranks")
    x, y = samples()

    def trained(net, model):
        model.compile(optimizer=torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.5),
                      loss=torch.nn.CrossEntropyLoss(), deterministic=4)
        model.fit((x, y), batch_size=16, epochs=1, shuffle=False, verbose=0)
        return (model._impl.trained_module.state_dict(),
                model.evaluate((x, y), batch_size=16, verbose=0),
                model.predict(x, batch_size=16))

    for p in stage_layouts(size):
        alone_net = make_random_net(p == 2)
        alone = tnt.Model(alone_net, group=tnt.world().split(rank))
        ref, ref_loss, ref_out = trained(alone_net, alone)
        net = make_random_net(p == 2)
        mine, loss, out = trained(net, tnt.Model(net, pipeline_stages=p))
        assert mine and set(mine) < set(ref)
        for name, t in mine.items():
            assert torch.equal(ref[name], t), f"P={p}: {name} differs by {relative(ref[name], t)}"
        assert loss == ref_loss, f"P={p}"
        assert torch.equal(ref_out, out), f"P={p}"


def test_each_rank_holds_its_stage_and_the_others_are_freed(size, rank):
    if size % 2:
        pytest.skip("two stages need an even number of ranks")
    net = make_net(split_point=True)
    tnt.Model(net, pipeline_stages=2)
    held = {name for name, p in net.named_parameters() if p.numel() > 0}
    first, second = {"0.weight", "0.bias", "2.weight", "2.bias"}, {"5.weight", "5.bias",
                                                                  "7.weight", "7.bias"}
    assert held == (first if rank % 2 == 0 else second)


def test_a_model_built_on_the_meta_device_is_materialised_by_its_stages(size, rank):
    """The route for a model too large for one rank (docs/guide/pipelining.md):
    built on the meta device (no memory), wrapped, and only this rank's stage
    materialised (to_empty, then initialised). Each rank then holds its stage's
    parameter count and no more, and the model trains as serial PyTorch does
    from the same initial weights."""
    if size % 2:
        pytest.skip("two stages need an even number of ranks")
    reference = make_net(split_point=True)  # the same layers with memory: the initial weights

    def linear(n_in, n_out):
        return torch.nn.Linear(n_in, n_out, device="meta")

    net = torch.nn.Sequential(linear(6, 24), torch.nn.ReLU(), linear(24, 24), tnt.nn.SplitPoint(),
                              torch.nn.Tanh(), linear(24, 16), torch.nn.ReLU(), linear(16, 4))
    assert all(p.is_meta for p in net.parameters())
    model = tnt.Model(net, pipeline_stages=2, micro_batches=4)
    with pytest.raises(tnt.Error, match="parameter '0.weight' of this rank's model is on the "
                                        "meta device|parameter '5.weight' of this rank's model "
                                        "is on the meta device"):
        model.compile(optimizer="sgd", loss=torch.nn.CrossEntropyLoss())
    stage = model.stage_module
    stage.to_empty(device=model.device)
    for layer in stage.modules():
        if hasattr(layer, "reset_parameters"):
            layer.reset_parameters()
    assert not any(p.is_meta for p in stage.parameters())
    # Stage 0: Linear(6, 24) and Linear(24, 24); stage 1: Linear(24, 16) and Linear(16, 4).
    counts = [6 * 24 + 24 + 24 * 24 + 24, 24 * 16 + 16 + 16 * 4 + 4]
    assert sum(p.numel() for p in stage.parameters()) == counts[rank % 2]
    held = sum(p.numel() for p in net.parameters() if not p.is_meta)
    assert held == counts[rank % 2], "the other stage's tensors hold memory"
    # Initialised from a checkpoint instead: trains as serial PyTorch does.
    stage.load_state_dict({k: v for k, v in reference.state_dict().items()
                           if k in stage.state_dict()})
    model.compile(optimizer=torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.5),
                  loss=torch.nn.CrossEntropyLoss())
    x, y = samples()
    model.fit((x, y), batch_size=16, epochs=1, shuffle=False, verbose=0)
    weights, _, _ = serial(split_point=True)
    for name, w in stage.state_dict().items():
        assert relative(weights[name], w) < 1e-5, name


def test_mistakes_are_named(size):
    with pytest.raises(TypeError, match="cuts a torch.nn.Sequential into stages, got a Net"):
        class Net(torch.nn.Module):
            def forward(self, x):
                return x
        tnt.Model(Net(), pipeline_stages=size)
    with pytest.raises(ValueError, match="cannot run .* pipeline stages: the number of ranks "
                                         "must be a multiple of"):
        tnt.Model(make_net(False), pipeline_stages=size + 1)
    with pytest.raises(TypeError, match="pipeline_stages must be an int"):
        tnt.Model(make_net(False), pipeline_stages="2")
    with pytest.raises(ValueError, match="micro_batches=0: it must be at least 1"):
        tnt.Model(make_net(False), micro_batches=0)
    with pytest.raises(ValueError, match="schedule='zz' is not a pipeline schedule"):
        tnt.Model(make_net(False), pipeline_stages=size, schedule="zz")
    if size > 2:  # the net's one SplitPoint makes 2 stages
        with pytest.raises(ValueError, match="1 SplitPoint, which make 2 stages, but "
                                             f"pipeline_stages={size}"):
            tnt.Model(make_net(True), pipeline_stages=size)
