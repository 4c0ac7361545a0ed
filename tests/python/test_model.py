"""tnt.Model on the C++ engine, at every rank count of the job: the weights of an
independent serial torch loop, Keras's fit/evaluate/predict results, Python
callbacks with global logs and the stop vote, weight files, and bad input.

The model trains on the device the launcher gave the rank (a GPU where there
is one; the serial loops run on the CPU): results are compared on the CPU."""
import collections
import copy
import os
import tempfile
import warnings

import pytest
import torch

import tarantella as tnt


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(1, 4, 3)
        self.fc1 = torch.nn.Linear(4 * 6 * 6, 16)
        self.fc2 = torch.nn.Linear(16, 5)

    def forward(self, x):
        x = torch.relu(self.conv(x)).flatten(1)
        return self.fc2(torch.tanh(self.fc1(x)))


def make_net(seed=1):
    torch.manual_seed(seed)
    return Net()


class Data(torch.utils.data.Dataset):
    """A map-style dataset as a user writes one: 125 samples, so global
    batches of 16 end in a short one of 13 (uneven shares at 2, 3 and 4 ranks)."""

    def __init__(self, n=125):
        g = torch.Generator().manual_seed(0)
        self.x = torch.randn(n, 1, 8, 8, generator=g)
        self.y = torch.randint(0, 5, (n,), generator=g)

    def __len__(self):
        return len(self.y)

    def __getitem__(self, i):
        return self.x[i], self.y[i]


def serial_sgd(net, data, batch, steps, lr=0.1, momentum=0.5):
    """Plain PyTorch, no tarantella: the same batches in file order."""
    opt = torch.optim.SGD(net.parameters(), lr=lr, momentum=momentum)
    loss_fn = torch.nn.CrossEntropyLoss()
    done = 0
    while done < steps:
        for start in range(0, len(data), batch):
            if done == steps:
                break
            x, y = data.x[start:start + batch], data.y[start:start + batch]
            opt.zero_grad()
            loss_fn(net(x), y).backward()
            opt.step()
            done += 1
    return net


def max_rel_diff(a, b):
    """Worst relative difference of two lists of tensors, on the CPU in float64
    (one side may be a model's, on its GPU)."""
    a = [p.detach().cpu().double() for p in a]
    b = [q.detach().cpu().double() for q in b]
    return max(((p - q).abs().max() / max(1.0, p.abs().max())).item()
               for p, q in zip(a, b))


def device_of(model):
    """Where a tnt.Model trains: its module's device (cuda:local_rank on a GPU)."""
    return next(model.module.parameters()).device


def compiled(net, metrics=("sparse_categorical_accuracy",), **settings):
    model = tnt.Model(net)
    model.compile(optimizer=torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.5),
                  loss=torch.nn.CrossEntropyLoss(), metrics=list(metrics), **settings)
    return model


def test_fit_matches_a_serial_torch_loop_after_30_steps():
    data = Data()
    reference = serial_sgd(make_net(), data, 16, 30)  # 8 steps an epoch: 30 = 3 epochs + 6
    model = compiled(make_net())
    model.fit(data, batch_size=16, epochs=3, shuffle=False, verbose=0)
    model.fit(data, batch_size=16, epochs=4, initial_epoch=3, steps_per_epoch=6, shuffle=False,
              verbose=0)
    diff = max_rel_diff(list(reference.parameters()), list(model.module.parameters()))
    assert diff < 1e-5, f"{tnt.get_size()} ranks: relative difference {diff}"


def test_fit_evaluate_and_predict_leave_the_modes_as_they_found_them():
    # A module in eval mode stays there after fit (it used to come back in
    # training mode, or in eval mode after validation), and a submodule set
    # apart (a frozen part) keeps its own mode.
    data = Data(40)
    model = compiled(make_net())
    net = model.module
    for whole in (False, True):
        net.train(whole)
        net.fc1.train(not whole)
        before = [m.training for m in net.modules()]
        model.fit(data, batch_size=16, epochs=1, verbose=0, validation_data=Data(20))
        assert [m.training for m in net.modules()] == before, f"after fit, whole {whole}"
        model.evaluate(data, batch_size=16, verbose=0)
        assert [m.training for m in net.modules()] == before, f"after evaluate, whole {whole}"
        model.predict(data.x, batch_size=16)
        assert [m.training for m in net.modules()] == before, f"after predict, whole {whole}"


def test_history_evaluate_and_predict_are_global():
    data = Data()
    model = compiled(make_net())
    history = model.fit(data, batch_size=16, epochs=2, shuffle=True, verbose=0)
    assert sorted(history.history) == ["loss", "sparse_categorical_accuracy"]
    assert len(history.history["loss"]) == 2 and history.epoch == [0, 1]
    loss, accuracy = model.evaluate(data, batch_size=32)
    with torch.no_grad():
        out = model.module(data.x.to(device_of(model))).cpu()
    expected_loss = torch.nn.functional.cross_entropy(out, data.y).item()
    expected_acc = (out.argmax(1) == data.y).double().mean().item()
    assert loss == pytest.approx(expected_loss, rel=1e-5)
    assert accuracy == pytest.approx(expected_acc, abs=1e-12)
    assert model.evaluate(data, batch_size=32, return_dict=True)["loss"] == pytest.approx(loss)
    predicted = model.predict(data.x, batch_size=20)
    assert predicted.shape == (125, 5)
    assert torch.allclose(predicted.cpu(), out, atol=1e-6)


def test_python_callbacks_see_global_logs_and_one_rank_stops_all():
    data = Data()

    class Recorder(tnt.callbacks.Callback):
        def __init__(self):
            super().__init__()
            self.epochs, self.losses, self.batches = [], [], 0

        def on_train_batch_end(self, batch, logs=None):
            self.batches += 1

        def on_epoch_end(self, epoch, logs=None):
            self.epochs.append(epoch)
            self.losses.append(logs["loss"])
            if epoch == 1 and tnt.get_rank() == tnt.get_size() - 1:
                self.model.stop_training = True  # only the last rank asks

    recorder = Recorder()
    model = compiled(make_net())
    history = model.fit(data, batch_size=16, epochs=5, verbose=0, callbacks=[recorder])
    assert recorder.epochs == [0, 1]
    assert recorder.batches == 16
    assert recorder.params["epochs"] == 5 and recorder.params["steps"] == 8
    assert recorder.losses == history.history["loss"]
    # Global logs: the same on every rank.
    gathered = tnt.allgather(torch.tensor(recorder.losses, dtype=torch.float64).reshape(1, -1))
    assert torch.equal(gathered.min(0).values, gathered.max(0).values)


def test_model_checkpoint_keeps_its_best_across_fit_calls_and_fills_folders():
    # Keras's: the best value holds across a loop of fit(epochs=1) (each
    # call saved again), and a folder with {fields} is made at each save (it
    # failed at fit's start). load_weights takes a checkpoint's weights.
    directory = tnt.broadcast_object(tempfile.mkdtemp() if tnt.is_master_rank() else None)
    net = make_net()
    model = tnt.Model(net)
    model.compile(optimizer=torch.optim.SGD(net.parameters(), lr=0.0),  # the same loss each epoch
                  loss=torch.nn.CrossEntropyLoss())
    best = tnt.callbacks.ModelCheckpoint(os.path.join(directory, "ep{epoch}", "best.pt"),
                                         monitor="loss", save_best_only=True)
    for epoch in range(3):  # no improvement after the first: one file
        model.fit(Data(), batch_size=16, epochs=epoch + 1, initial_epoch=epoch, shuffle=False,
                  verbose=0, callbacks=[best])
    tnt.barrier()
    saved = sorted(os.listdir(directory))
    assert saved == ["ep1"], saved
    other = compiled(make_net(seed=5))
    other.load_weights(os.path.join(directory, "ep1", "best.pt"))
    assert len(other.get_weights()) == len(model.get_weights())


class Recorded(Data):
    """Data that records the samples this rank reads, in order."""

    def __init__(self):
        super().__init__(48)
        self.read = []

    def __getitem__(self, i):
        self.read.append(int(i))
        return super().__getitem__(i)


def test_fit_called_again_and_a_loaded_model_read_the_next_epochs_order():
    # Keras's `for e in ...: fit(epochs=1)`: each call reads the next
    # epoch's shuffle order (each used to repeat epoch 0's), the orders of
    # one fit(epochs=3); a model saved and loaded between the calls goes on
    # where it was.
    def reads(model, data, **fit):
        data.read.clear()
        model.fit(data, batch_size=16, verbose=0, **fit)
        return list(data.read)

    data = Recorded()
    reference = compiled(make_net())
    reads(reference, data, epochs=3)
    assert len(data.read) > 0
    one_fit = list(data.read)
    per_epoch = len(one_fit) // 3
    epochs = [one_fit[i * per_epoch:(i + 1) * per_epoch] for i in range(3)]
    assert epochs[0] != epochs[1] and epochs[1] != epochs[2]

    model = compiled(make_net())
    assert reads(model, data) == epochs[0]
    assert reads(model, data) == epochs[1]
    directory = tnt.broadcast_object(tempfile.mkdtemp() if tnt.is_master_rank() else None)
    path = os.path.join(directory, "after-two.pt")
    model.save(path)
    loaded = compiled(make_net())
    loaded.load(path)
    assert reads(loaded, data) == epochs[2]


def test_history_records_lr_and_csv_logger_writes_floats_as_repr():
    # As Keras: a learning-rate callback puts the epoch's rate in the logs,
    # so History (and CSVLogger) have "lr"; CSVLogger's numbers are Python's
    # repr of the double (the shortest text that reads back the same).
    directory = tnt.broadcast_object(tempfile.mkdtemp() if tnt.is_master_rank() else None)
    path = os.path.join(directory, "log.csv")
    schedule = tnt.callbacks.LearningRateScheduler(lambda epoch, lr: 0.1 / (epoch + 1) ** 2)
    model = compiled(make_net())
    history = model.fit(Data(), batch_size=16, epochs=3, verbose=0,
                        callbacks=[schedule, tnt.callbacks.CSVLogger(path)])
    assert history.history["lr"] == [0.1, 0.1 / 4, 0.1 / 9]
    tnt.barrier()
    if tnt.is_master_rank():
        with open(path) as f:
            rows = [line.rstrip("\n").split(",") for line in f]
        assert rows[0] == ["epoch", "loss", "lr", "sparse_categorical_accuracy"]
        for epoch, row in enumerate(rows[1:]):
            assert row[0] == str(epoch)
            for text in row[1:]:
                assert text == repr(float(text)), text  # e.g. 0.011111111111111112
            assert float(row[1]) == history.history["loss"][epoch]  # round trip: exact
            assert float(row[2]) == history.history["lr"][epoch]
        assert rows[3][2] == repr(0.1 / 9)


def test_builtin_and_lambda_callbacks():
    data = Data()
    seen = []
    lam = tnt.callbacks.LambdaCallback(on_epoch_begin=lambda epoch, logs: seen.append(epoch))
    rates = []
    schedule = tnt.callbacks.LearningRateScheduler(lambda epoch, lr: rates.append(lr) or lr / 2)
    model = compiled(make_net())
    model.fit(data, batch_size=16, epochs=3, verbose=0, callbacks=[lam, schedule])
    assert seen == [0, 1, 2]
    assert rates == pytest.approx([0.1, 0.05, 0.025])
    assert model.learning_rate == pytest.approx(0.0125)


class Counter(tnt.callbacks.Callback):
    """Counts its batch hooks: every call must arrive."""

    def __init__(self):
        super().__init__()
        self.calls = {}

    def _count(self, hook):
        self.calls[hook] = self.calls.get(hook, 0) + 1

    def on_train_batch_begin(self, batch, logs=None): self._count("train_begin")
    def on_train_batch_end(self, batch, logs=None): self._count("train_end")
    def on_test_batch_end(self, batch, logs=None): self._count("test_end")
    def on_predict_batch_end(self, batch, logs=None): self._count("predict_end")


class EpochsOnly(tnt.callbacks.Callback):
    """Overrides only on_epoch_end, and counts how often the trampoline looks
    any hook up: the inherited no-ops are decided once, not at every step."""

    def __init__(self):
        super().__init__()
        self.epochs, self.lookups = [], 0

    def __getattribute__(self, name):
        if name.startswith("on_"):
            object.__setattr__(self, "lookups", object.__getattribute__(self, "lookups") + 1)
        return object.__getattribute__(self, name)

    def on_epoch_end(self, epoch, logs=None):
        self.epochs.append(epoch)


def test_callbacks_get_the_hooks_they_override_and_nothing_per_step_otherwise():
    data = Data()   # 125 samples: 8 training steps of 16
    counter, epochs_only = Counter(), EpochsOnly()
    lam = tnt.callbacks.LambdaCallback(on_train_batch_end=lambda b, logs: seen.append(b))
    seen = []
    model = compiled(make_net())
    model.fit(data, batch_size=16, epochs=3, verbose=0, callbacks=[counter, epochs_only, lam])
    assert counter.calls == {"train_begin": 24, "train_end": 24}
    assert seen == list(range(8)) * 3
    assert epochs_only.epochs == [0, 1, 2]
    # 14 hooks looked up once when fit starts, then on_epoch_end per epoch.
    assert epochs_only.lookups == 14 + 3
    model.evaluate(data, batch_size=50, callbacks=[counter])
    model.predict(data.x, batch_size=25, callbacks=[counter])
    assert (counter.calls["test_end"], counter.calls["predict_end"]) == (3, 5)
    # fit()'s validation runs the test hooks too, as in Keras (125 samples in
    # validation batches of 25: 5 per epoch).
    model.fit(data, batch_size=16, epochs=2, verbose=0, validation_data=data,
              validation_batch_size=25, callbacks=[counter])
    assert counter.calls["test_end"] == 3 + 2 * 5


def test_validation_steps_evaluates_exactly_the_first_batches():
    data, val = Data(), Data(n=60)  # validation: 6 batches of 10
    counter = Counter()
    model = compiled(make_net())
    history = model.fit(data, batch_size=16, epochs=1, verbose=0, validation_data=val,
                        validation_batch_size=10, validation_steps=2, callbacks=[counter])
    assert counter.calls["test_end"] == 2  # two validation batches ran, not six
    val_loss = history.history["val_loss"][0]
    # The validation ran after the epoch's last step: the weights it saw are
    # the model's now, so evaluate over the same two batches gives its value.
    assert model.evaluate(val, batch_size=10, steps=2) == [
        val_loss, history.history["val_sparse_categorical_accuracy"][0]]
    with torch.no_grad():
        out = model.module(val.x[:20].to(device_of(model))).cpu()
    assert val_loss == pytest.approx(
        torch.nn.functional.cross_entropy(out, val.y[:20]).item(), rel=1e-5)
    assert model.evaluate(val, batch_size=10)[0] != pytest.approx(val_loss, rel=1e-5)
    # None and 0 are every batch, as in Keras.
    every = model.evaluate(val, batch_size=10)
    assert model.evaluate(val, batch_size=10, steps=0) == every
    with pytest.raises(ValueError, match="validation_steps=-1"):
        model.fit(data, batch_size=16, verbose=0, validation_data=val, validation_steps=-1)
    with pytest.raises(TypeError, match="validation_steps"):
        model.fit(data, batch_size=16, verbose=0, validation_data=val, validation_steps=1.5)


def test_weights_round_trip_through_torch_save_files():
    model = compiled(make_net())
    model.fit(Data(), batch_size=16, epochs=1, verbose=0)
    directory = tnt.broadcast_object(tempfile.mkdtemp() if tnt.is_master_rank() else None)
    path = os.path.join(directory, "w.pt")
    model.save_weights(path)
    other = compiled(make_net(seed=7))
    other.load_weights(path)
    for a, b in zip(model.get_weights(), other.get_weights()):
        assert torch.equal(a, b)
    if tnt.is_master_rank():
        state = torch.load(path)   # written from the CPU, whatever the model's device
        assert state["fc2.weight"].device == torch.device("cpu")
        assert torch.equal(state["fc2.weight"], model.module.fc2.weight.detach().cpu())


def test_calling_the_model_runs_the_forward_on_the_model_s_device():
    """model(x) with host inputs, on whichever device the rank trains on:
    the inputs are moved there, as tnt::Model::forward does in C++."""
    model = compiled(make_net())
    x = torch.randn(3, 1, 8, 8)
    out = model(x)
    assert out.device == torch.device(model.device)
    with torch.no_grad():
        want = model.module(x.to(model.device))
    assert torch.allclose(out.detach().cpu(), want.cpu(), rtol=1e-5, atol=1e-6)
    with pytest.raises(TypeError, match="input 0 is a list, not a torch.Tensor"):
        model([1.0, 2.0])


def test_get_weights_are_host_copies():
    model = compiled(make_net())
    weights = model.get_weights()
    assert all(w.device == torch.device("cpu") for w in weights)
    assert weights[0].numpy().shape == tuple(model.module.conv.weight.shape)
    weights[0].zero_()
    assert model.module.conv.weight.detach().abs().sum().item() > 0, "a copy, not a view"


def test_fit_takes_data_already_on_the_gpu():
    """Tensors a user put on the GPU are batched there: with pin_memory on
    (every GPU run), stacking them into page-locked host memory would be an
    error. Without a GPU there is nothing to check."""
    model = compiled(make_net())
    if torch.device(model.device).type != "cuda":
        pytest.skip("the model is not on a GPU")
    data = Data()
    x, y = data.x.to(model.device), data.y.to(model.device)
    history = model.fit(x, y, batch_size=16, epochs=1, verbose=0, validation_data=(x, y))
    assert torch.isfinite(torch.tensor(history.history["loss"])).all()
    assert model.evaluate(x, y, batch_size=16, verbose=0)
    assert model.predict(x, batch_size=16, verbose=0).shape == (len(data), 5)


def test_calling_a_pipelined_model_points_to_predict(size):
    if size % 2:
        pytest.skip("2 stages need an even number of ranks")
    net = torch.nn.Sequential(torch.nn.Linear(4, 4), tnt.nn.SplitPoint(), torch.nn.Linear(4, 3))
    model = tnt.Model(net, pipeline_stages=2)
    with pytest.raises(ValueError, match="use model.predict"):
        model(torch.randn(2, 4))


def test_a_non_module_is_refused_with_the_fix():
    with pytest.raises(TypeError, match="module must be a torch.nn.Module, got a function"):
        tnt.Model(lambda x: x)


def test_a_target_shape_mismatch_names_both_shapes():
    model = tnt.Model(make_net())
    model.compile(optimizer="sgd", loss="mse")
    x = torch.randn(20, 1, 8, 8)
    with pytest.raises(tnt.Error, match=r"\[.*5\]"):
        model.fit(x, torch.randn(20, 3), batch_size=8, epochs=1, verbose=0)


def test_a_data_set_smaller_than_the_ranks_is_an_error_on_every_rank():
    if tnt.get_size() < 2:
        pytest.skip("needs 2 ranks or more")
    model = compiled(make_net())
    small = Data(n=tnt.get_size() - 1)
    with pytest.raises(tnt.Error, match="fewer than the .* ranks of the model.s group"):
        model.fit(small, batch_size=16, epochs=1, verbose=0)


def test_optimizers_outside_the_supported_set_name_the_alternative():
    net = make_net()
    model = tnt.Model(net)
    with pytest.raises(ValueError, match="DistributedOptimizer"):
        model.compile(optimizer=torch.optim.Adamax(net.parameters()), loss="mse")
    with pytest.raises(ValueError, match="not the model's trainable parameters"):
        model.compile(optimizer=torch.optim.SGD(make_net().parameters(), lr=0.1), loss="mse")


def test_a_backup_from_an_epoch_end_resumes_at_the_next_epoch():
    """BackupAndRestore's epoch-end backup holds no mid-epoch loss state; it
    must resume at the next epoch (it was refused as 'holds 0 values')."""
    directory = tnt.broadcast_object(tempfile.mkdtemp() if tnt.is_master_rank() else None)
    data = Data()
    first = compiled(make_net())
    first.fit(data, batch_size=16, epochs=1, verbose=0,
              callbacks=[tnt.callbacks.BackupAndRestore(directory, delete_checkpoint=False)])
    seen = []
    second = compiled(make_net(seed=9))
    history = second.fit(data, batch_size=16, epochs=3, verbose=0,
                         callbacks=[tnt.callbacks.BackupAndRestore(directory),
                                    tnt.callbacks.LambdaCallback(
                                        on_epoch_begin=lambda e, l: seen.append(e))])
    assert seen == [1, 2]
    assert second.epochs_done == 3
    assert history.epoch == [1, 2]


def test_numpy_arrays_as_keras_takes_them():
    # numpy's float64 arrays take the parameters' dtype (Keras casts them to
    # floatx), in fit, evaluate and predict; get_weights' arrays go back in
    # with set_weights; a batched tnt.data.Dataset as validation_data beside
    # fit's batch_size.
    np = pytest.importorskip("numpy")
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 3))
    y = x.sum(axis=1, keepdims=True)
    assert x.dtype == np.float64
    torch.manual_seed(0)
    model = tnt.Model(torch.nn.Linear(3, 1))
    model.compile(optimizer="sgd", loss=torch.nn.MSELoss())
    valid = tnt.data.Dataset.from_tensor_slices(
        [torch.as_tensor(x, dtype=torch.float32), torch.as_tensor(y, dtype=torch.float32)]).batch(16)
    model.fit(x, y, batch_size=16, epochs=2, verbose=0, validation_data=valid)
    assert model.evaluate(x, y, batch_size=16) < 1e3
    assert model.predict(x, batch_size=16).dtype == torch.float32
    weights = [w.numpy() for w in model.get_weights()]
    model.set_weights([w * 0 for w in weights])
    assert all(float(w.abs().sum()) == 0 for w in model.get_weights())
    model.set_weights(weights)
    assert all(np.array_equal(a.numpy(), b) for a, b in zip(model.get_weights(), weights))
    # Components in a namedtuple, as before the cast: kept as given.
    Pair = collections.namedtuple("Pair", "x y")
    pair = Pair(torch.as_tensor(x, dtype=torch.float32), torch.as_tensor(y, dtype=torch.float32))
    assert model._floating_arrays(pair) is pair
    model.fit(pair, batch_size=16, epochs=1, verbose=0)
    cast = model._floating_arrays(Pair(x, y))
    assert type(cast) is Pair and cast.x.dtype == torch.float32
    # A list of (array, label) samples: each sample's array cast.
    samples = [(x[i], 0) for i in range(16)]
    model.compile(optimizer="sgd", loss="sparse_categorical_crossentropy")
    assert model._floating_arrays(samples)[3][0].dtype == torch.float32


def test_a_torch_scheduler_on_the_compiled_optimizer_is_named_at_fit():
    # The engine steps an optimizer of its own: a torch lr_scheduler on the
    # optimizer given to compile() would change nothing, silently.
    net = make_net()
    sgd = torch.optim.SGD(net.parameters(), lr=0.1)
    model = tnt.Model(net)
    model.compile(optimizer=sgd, loss=torch.nn.CrossEntropyLoss())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model.fit(Data(40), batch_size=16, epochs=1, verbose=0)  # unchanged: no warning
    torch.optim.lr_scheduler.StepLR(sgd, step_size=1, gamma=0.5).step()
    with pytest.warns(UserWarning, match="LearningRateScheduler"):
        model.fit(Data(40), batch_size=16, epochs=2, initial_epoch=1, verbose=0)
    with pytest.raises(ValueError, match="eps"):
        model.compile(optimizer=torch.optim.Adagrad(net.parameters(), eps=1e-6),
                      loss=torch.nn.CrossEntropyLoss())


def test_fit_inside_autocast_names_mixed_precision():
    model = compiled(make_net())
    with pytest.warns(UserWarning, match="mixed_precision"):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            model.fit(Data(40), batch_size=16, epochs=1, verbose=0)


def test_parameter_groups_keep_their_own_hyper_parameters():
    # Two groups (no weight decay and a smaller rate for the biases) against
    # the same torch optimizer in a plain serial loop.
    def groups(net):
        weights = [p for n, p in net.named_parameters() if n.endswith("weight")]
        biases = [p for n, p in net.named_parameters() if n.endswith("bias")]
        return [{"params": weights, "weight_decay": 0.01},
                {"params": biases, "lr": 0.02, "momentum": 0.0}]

    data = Data()
    reference = make_net()
    opt = torch.optim.SGD(groups(reference), lr=0.1, momentum=0.5)
    loss_fn = torch.nn.CrossEntropyLoss()
    for start in range(0, 64, 16):
        opt.zero_grad()
        loss_fn(reference(data.x[start:start + 16]), data.y[start:start + 16]).backward()
        opt.step()
    net = make_net()
    model = tnt.Model(net)
    model.compile(optimizer=torch.optim.SGD(groups(net), lr=0.1, momentum=0.5),
                  loss=torch.nn.CrossEntropyLoss())
    model.fit(data, batch_size=16, epochs=1, steps_per_epoch=4, shuffle=False, verbose=0)
    diff = max_rel_diff(list(reference.parameters()), list(model.module.parameters()))
    assert diff < 1e-5, f"{tnt.get_size()} ranks: relative difference {diff}"
    # One group alone differs: the groups really took effect.
    plain = serial_sgd(make_net(), data, 16, 4)
    assert max_rel_diff(list(plain.parameters()), list(model.module.parameters())) > 1e-4


def test_parameter_groups_must_hold_each_trainable_parameter_once():
    net = make_net()
    model = tnt.Model(net)
    params = list(net.parameters())
    with pytest.raises(ValueError, match="each exactly once"):
        model.compile(optimizer=torch.optim.SGD([{"params": params[:2]}], lr=0.1), loss="mse")
