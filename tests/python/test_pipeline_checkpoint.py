"""Full checkpoints with pipeline stages: save() at one layout (P, D) writes
the whole training state as the unsplit model's checkpoint would, and
load() takes it at any other. At 4 ranks: a checkpoint written at (2, 2)
loads at (4, 1), (1, 2) and (1, 1) with the saved weights exactly, and one
more epoch from it ends within 1e-5 of one more epoch of the uninterrupted
run (momentum and Adam's moments come back, or it would not); a checkpoint
of an unsplit run loads into a pipelined model the same way, also from an
optimizer built over the parameters in another order. Run as
python.pipeline_checkpoint.n4 (ctest -R pipeline)."""
import pytest
import torch

import tarantella as tnt
from test_pipeline import make_net, relative, samples

OPTIMIZERS = {
    "sgd_momentum": lambda params: torch.optim.SGD(params, lr=0.1, momentum=0.5),
    "adam": lambda params: torch.optim.Adam(params, lr=0.01),
    # ZeRO-1 within each stage's replicas: the saved state is the whole one.
    "adam_sharded": lambda params: torch.optim.Adam(params, lr=0.01),
    # Over the parameters in reverse order: the state maps by parameter, not by position.
    "sgd_momentum_reversed": lambda params: torch.optim.SGD(list(reversed(list(params))),
                                                            lr=0.1, momentum=0.5),
}


def compiled(stages, group, optimizer):
    """The test's Sequential (cut by parameter count) at `stages` stages over `group`."""
    net = make_net(split_point=False)
    model = tnt.Model(net, group, pipeline_stages=stages,
                      micro_batches=4 if stages > 1 else None)
    model.compile(optimizer=OPTIMIZERS[optimizer](net.parameters()),
                  loss=torch.nn.CrossEntropyLoss(),
                  shard_optimizer=optimizer.endswith("_sharded") and group.size > stages)
    return model


def fit(model, epochs, callbacks=None):
    x, y = samples()
    model.fit((x, y), batch_size=16, epochs=epochs, shuffle=False, verbose=0,
              callbacks=callbacks)


def reference(stages, optimizer, folder):
    """Trains at `stages` stages on every rank for 2 epochs and saves; then
    one more epoch. Returns the checkpoint, its weights and the final weights."""
    paths = tnt.broadcast_object({k: str(folder / f"{k}.pt")
                                  for k in ("ckpt", "saved", "end", "epoch-2")})
    model = compiled(stages, tnt.world(), optimizer)
    # ModelCheckpoint writes in the background: its epoch-2 file is the
    # state save() writes next.
    fit(model, 2, [tnt.callbacks.ModelCheckpoint(paths["end"].replace("end", "epoch-{epoch}"))])
    model.save(paths["ckpt"])
    model.save_weights(paths["saved"])
    fit(model, 1)
    model.save_weights(paths["end"])
    if tnt.is_master_rank():  # the unsplit model's content, whatever the layout
        checkpoint, saved = torch.load(paths["ckpt"]), torch.load(paths["saved"])
        assert list(checkpoint["weights"]) == list(saved)
        assert all(torch.equal(checkpoint["weights"][k], saved[k]) for k in saved)
        if stages > 1:
            assert set(checkpoint["optimizer_by_name"]) == set(saved)  # no buffers here
            assert checkpoint["optimizer_kind"] == ("Adam" if "adam" in optimizer else "SGD")
    return paths


def weights_alone_do_not_resume(stages, paths, optimizer):
    """The control: the same epoch from the saved weights without the
    optimizer state (load_weights) ends far from the uninterrupted run, so
    the 1e-5 above measures the optimizer state that load() brings back."""
    model = compiled(stages, tnt.world(), optimizer)
    model.load_weights(paths["saved"])
    fit(model, 1)
    out = paths["end"].replace("end.pt", "weights_alone.pt")
    model.save_weights(out)
    if tnt.is_master_rank():
        end, alone = torch.load(paths["end"]), torch.load(out)
        assert max(relative(end[k], alone[k]) for k in end) > 1e-3


def resume_and_compare(stages, group, paths, optimizer, label):
    """On `group`'s ranks: loads the checkpoint at `stages` stages, checks the
    rank's tensors against the saved weights bit for bit, trains one more
    epoch and compares the whole model with the uninterrupted run's."""
    if not group.is_member:
        return
    model = compiled(stages, group, optimizer)
    assert model.load(paths["ckpt"]) == 2, label
    saved = torch.load(paths["saved"])
    mine = model._impl.trained_module.state_dict()
    assert mine and set(mine) <= set(saved), label
    for name, w in mine.items():
        assert torch.equal(w.cpu(), saved[name]), f"{label}: {name} differs after load"
    fit(model, 1)
    out = paths["end"].replace("end.pt", f"resumed_{stages}_{group.size}.pt")
    model.save_weights(out)
    if group.is_master:
        end, resumed = torch.load(paths["end"]), torch.load(out)
        assert list(resumed) == list(end), label
        for name in end:
            worst = relative(end[name], resumed[name])
            assert worst < 1e-5, f"{label}: {name} differs by {worst:.3g} from the uninterrupted run"


@pytest.mark.parametrize("optimizer", sorted(set(OPTIMIZERS) - {"sgd_momentum_reversed"}))
def test_a_checkpoint_at_2x2_resumes_at_every_layout(size, optimizer, tmp_path_factory):
    if size != 4:
        pytest.skip("the layouts (2, 2), (4, 1), (1, 2) and (1, 1) need 4 ranks")
    paths = reference(2, optimizer, tmp_path_factory.mktemp("ckpt"))
    world = tnt.world()
    pair, alone = world.subgroup([0, 1]), world.subgroup([0])
    resume_and_compare(4, world, paths, optimizer, "(2,2) -> (4,1)")
    resume_and_compare(1, pair, paths, optimizer, "(2,2) -> (1,2)")
    resume_and_compare(1, alone, paths, optimizer, "(2,2) -> (1,1)")
    resume_and_compare(2, world, paths, optimizer, "(2,2) -> (2,2)")
    resume_and_compare(4, world, dict(paths, ckpt=paths["epoch-2"]), optimizer,
                       "(2,2) ModelCheckpoint -> (4,1)")
    weights_alone_do_not_resume(4, paths, optimizer)
    world.barrier()


@pytest.mark.parametrize("optimizer", ["adam", "sgd_momentum"])
def test_an_unsplit_checkpoint_loads_into_stages(size, optimizer, tmp_path_factory):
    if size != 4:
        pytest.skip("the layouts (1, 4) and (2, 2) need 4 ranks")
    paths = reference(1, optimizer, tmp_path_factory.mktemp("unsplit"))
    resume_and_compare(2, tnt.world(), paths, optimizer, "(1,4) -> (2,2)")
    resume_and_compare(4, tnt.world(), paths, optimizer, "(1,4) -> (4,1)")
    tnt.world().barrier()


def test_an_optimizer_over_reversed_parameters_maps_by_parameter(size, tmp_path_factory):
    """An optimizer built over the parameters in another order than
    named_parameters(): a checkpoint of it at (1, 4) loads at (2, 2), and one
    at (2, 2) loads at (1, 1), each ending one more epoch within 1e-5 of the
    uninterrupted run with the same optimizer."""
    if size != 4:
        pytest.skip("the layouts (1, 4), (2, 2) and (1, 1) need 4 ranks")
    optimizer = "sgd_momentum_reversed"
    paths = reference(1, optimizer, tmp_path_factory.mktemp("reversed_unsplit"))
    resume_and_compare(2, tnt.world(), paths, optimizer, "reversed (1,4) -> (2,2)")
    paths = reference(2, optimizer, tmp_path_factory.mktemp("reversed_staged"))
    resume_and_compare(1, tnt.world().subgroup([0]), paths, optimizer, "reversed (2,2) -> (1,1)")
    tnt.world().barrier()


def test_what_does_not_work_yet_is_named(size, tmp_path_factory):
    if size % 2:
        pytest.skip("two stages need an even number of ranks")
    path = tnt.broadcast_object(str(tmp_path_factory.mktemp("refused") / "ckpt.pt"))
    model = compiled(2, tnt.world(), "sgd_momentum")
    with pytest.raises(tnt.Error, match="save\\(all_ranks=true\\) with pipeline stages"):
        model.save(path, tnt_save_all_devices=True)
    other = tnt.Model(torch.nn.Sequential(torch.nn.Linear(6, 5), torch.nn.ReLU(),
                                          torch.nn.Linear(5, 4)), pipeline_stages=2)
    other.compile(optimizer=torch.optim.SGD(other.module.parameters(), lr=0.1),
                  loss=torch.nn.CrossEntropyLoss())
    model.save(path)
    with pytest.raises(tnt.Error, match="has shape|has no entry|does not have"):
        other.load(path)


def grouped(stages, group):
    """Two parameter groups (the first layer at lr 0.1, the rest at 0.05)."""
    net = make_net(split_point=False)
    model = tnt.Model(net, group, pipeline_stages=stages,
                      micro_batches=4 if stages > 1 else None)
    first = [p for n, p in net.named_parameters() if n.startswith("0.")]
    rest = [p for n, p in net.named_parameters() if not n.startswith("0.")]
    model.compile(optimizer=torch.optim.SGD([{"params": first}, {"params": rest, "lr": 0.05}],
                                            lr=0.1, momentum=0.5),
                  loss=torch.nn.CrossEntropyLoss())
    return model


def test_a_learning_rate_set_in_training_comes_back_at_another_layout(size, tmp_path_factory):
    if size != 4:
        pytest.skip("the layouts (2, 2) and (4, 1) need 4 ranks")
    folder = tmp_path_factory.mktemp("groups")
    paths = tnt.broadcast_object({k: str(folder / f"{k}.pt") for k in ("ckpt", "end", "resumed")})
    model = grouped(2, tnt.world())
    fit(model, 2)
    model.learning_rate = 0.03  # as a schedule would: every group's
    model.save(paths["ckpt"])
    fit(model, 1)
    model.save_weights(paths["end"])
    loaded = grouped(4, tnt.world())
    loaded.load(paths["ckpt"])
    assert loaded.learning_rate == pytest.approx(0.03)
    fit(loaded, 1)
    loaded.save_weights(paths["resumed"])
    if tnt.is_master_rank():
        end, resumed = torch.load(paths["end"]), torch.load(paths["resumed"])
        for name in end:
            assert relative(end[name], resumed[name]) < 1e-5, name


def test_an_unsplit_checkpoint_of_several_groups_is_refused_by_stages(size, tmp_path_factory):
    if size % 2:
        pytest.skip("two stages need an even number of ranks")
    path = tnt.broadcast_object(str(tmp_path_factory.mktemp("unsplit_groups") / "ckpt.pt"))
    grouped(1, tnt.world()).save(path)
    with pytest.raises(tnt.Error, match="does not fit this pipelined model: .*load it with "
                                        "pipeline_stages=1"):
        grouped(2, tnt.world()).load(path)
