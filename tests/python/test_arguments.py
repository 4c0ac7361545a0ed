"""Argument mistakes raise the standard library's TypeError or ValueError, naming
the argument and the bad value; tnt.Error stays for failures while running.

Every rank makes the same mistake, and each is caught before any collective,
so the checks run alike at any rank count."""
import pytest
import torch

import tarantella as tnt


def model(compiled=True):
    m = tnt.Model(torch.nn.Linear(3, 2))
    if compiled:
        m.compile(optimizer="sgd", loss="mse")
    return m


def data():
    g = torch.Generator().manual_seed(0)
    return torch.randn(12, 3, generator=g), torch.randn(12, 2, generator=g)


def raises(cls, *names, call):
    """Asserts that call() raises exactly `cls` (not a tnt.Error) whose message
    contains every one of `names`."""
    with pytest.raises(cls) as info:
        call()
    assert not isinstance(info.value, tnt.Error), f"{type(info.value).__name__}: {info.value}"
    for name in names:
        assert name in str(info.value), f"'{name}' not in: {info.value}"
    return str(info.value)


def test_compile_optimizer_of_the_wrong_type_is_a_type_error():
    raises(TypeError, "optimizer", "got 3", call=lambda: model(False).compile(optimizer=3, loss="mse"))


def test_compile_unknown_optimizer_name_lists_the_known_ones():
    raises(ValueError, "optimizer='adamax'", "sgd", "adam",
           call=lambda: model(False).compile(optimizer="adamax", loss="mse"))


def test_compile_unknown_loss_lists_the_known_names():
    raises(ValueError, "loss='no_such_loss'", "sparse_categorical_crossentropy", "mse",
           call=lambda: model(False).compile(loss="no_such_loss"))


def test_compile_without_loss_or_with_a_number_is_a_type_error():
    raises(TypeError, "loss", call=lambda: model(False).compile(optimizer="sgd"))
    raises(TypeError, "loss", "got 3", call=lambda: model(False).compile(loss=3))


def test_compile_unknown_metric_lists_the_known_names():
    raises(ValueError, "metrics", "'no_such_metric'", "accuracy",
           call=lambda: model(False).compile(loss="mse", metrics=["no_such_metric"]))


def test_compile_metrics_not_a_list_or_a_number_inside_is_a_type_error():
    raises(TypeError, "metrics", "'accuracy'",
           call=lambda: model(False).compile(loss="mse", metrics="accuracy"))
    raises(TypeError, "metrics", "got 3", call=lambda: model(False).compile(loss="mse", metrics=[3]))


def test_compile_settings_of_the_wrong_type_or_unknown_name():
    raises(TypeError, "aggregation_frequency", "2.0",
           call=lambda: model(False).compile(loss="mse", aggregation_frequency=2.0))
    raises(ValueError, "mixed_precision='fp8'", "bfloat16",
           call=lambda: model(False).compile(loss="mse", mixed_precision="fp8"))
    raises(ValueError, "compression='int4'", "float16",
           call=lambda: model(False).compile(loss="mse", compression="int4"))


def test_compile_unsupported_optimizer_setting_is_a_value_error():
    m = model(False)
    sgd = torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9, dampening=0.5)
    raises(ValueError, "optimizer", "dampening=0.5", "DistributedOptimizer",
           call=lambda: m.compile(optimizer=sgd, loss="mse"))
    other = torch.optim.SGD(torch.nn.Linear(1, 1).parameters(), lr=0.1)
    raises(ValueError, "optimizer's parameters", call=lambda: m.compile(optimizer=other, loss="mse"))


def test_fit_negative_epochs_is_a_value_error():
    x, y = data()
    raises(ValueError, "epochs=-1", "initial_epoch=0",
           call=lambda: model().fit(x, y, epochs=-1, verbose=0))


def test_fit_zero_batch_size_is_a_value_error():
    x, y = data()
    raises(ValueError, "batch_size=0", call=lambda: model().fit(x, y, batch_size=0, verbose=0))


def test_fit_callback_that_is_not_one_is_a_type_error():
    x, y = data()
    raises(TypeError, "callbacks[0]", "3", call=lambda: model().fit(x, y, callbacks=[3], verbose=0))
    raises(TypeError, "callbacks", call=lambda: model().fit(
        x, y, callbacks=tnt.callbacks.TerminateOnNaN(), verbose=0))


def test_fit_arguments_of_the_wrong_type_are_type_errors():
    x, y = data()
    raises(TypeError, "epochs", "2.5", call=lambda: model().fit(x, y, epochs=2.5, verbose=0))
    raises(TypeError, "batch_size", "'4'", call=lambda: model().fit(x, y, batch_size="4", verbose=0))
    raises(TypeError, "shuffle", call=lambda: model().fit(x, y, shuffle="yes", verbose=0))
    raises(ValueError, "validation_freq=0",
           call=lambda: model().fit(x, y, validation_freq=0, verbose=0))
    raises(TypeError, "x", "int", call=lambda: model().fit(3, verbose=0))


def test_unknown_keywords_are_errors_never_ignored():
    x, y = data()
    raises(TypeError, "bogus", call=lambda: model().fit(x, y, bogus=1))
    raises(TypeError, "bogus", call=lambda: model(False).compile(loss="mse", bogus=1))
    raises(TypeError, "on_epoch_finish",
           call=lambda: tnt.callbacks.LambdaCallback(on_epoch_finish=print))


def test_evaluate_and_predict_check_their_arguments_too():
    x, y = data()
    raises(ValueError, "batch_size=0", call=lambda: model().evaluate(x, y, batch_size=0))
    raises(TypeError, "callbacks[0]", call=lambda: model().predict(x, callbacks=["progbar"]))


def test_model_of_a_non_module_is_a_type_error():
    raises(TypeError, "module", "torch.nn.Module", "function", call=lambda: tnt.Model(lambda x: x))
    raises(TypeError, "group", call=lambda: tnt.Model(torch.nn.Linear(1, 1), group=0))


def test_metric_and_loader_arguments():
    raises(TypeError, "fn", call=lambda: tnt.metrics.mean_of(3))
    raises(ValueError, "state_size=0", call=lambda: tnt.metrics.from_state(
        "m", lambda p, t: p, lambda s: s[0], state_size=0))
    raises(ValueError, "batch_size=0", call=lambda: tnt.data.DataLoader(torch.zeros(4), batch_size=0))
    raises(TypeError, "shuffle", call=lambda: tnt.data.DataLoader(torch.zeros(4), 4, shuffle=1))
    raises(ValueError, "generator=", "seed=", call=lambda: tnt.data.DataLoader(
        torch.zeros(4), 4, generator=torch.Generator()))
    raises(TypeError, "bogus", call=lambda: tnt.data.DataLoader(torch.zeros(4), 4, bogus=1))


def test_sync_batchnorm_and_optimizer_arguments():
    raises(TypeError, "module", "str", call=lambda: tnt.nn.convert_sync_batchnorm("resnet"))
    raises(TypeError, "group", call=lambda: tnt.nn.SyncBatchNorm(2, group=3))
    raises(TypeError, "optimizer", call=lambda: tnt.DistributedOptimizer(object()))
    w = torch.nn.Parameter(torch.ones(1))
    raises(TypeError, "closure",
           call=lambda: tnt.DistributedOptimizer(torch.optim.SGD([w], lr=0.1)).step(lambda: 0.0))


def test_cpp_argument_error_is_a_value_error_with_the_message():
    from tarantella import _tarantella
    message = "[tarantella rank 0] fit(): epochs=-1 must be greater than initial_epoch=0"
    with pytest.raises(ValueError) as info:
        _tarantella._testing.raise_error("argument", message)
    assert type(info.value) is ValueError and str(info.value) == message


def test_runtime_failures_stay_tnt_errors(rank, size):
    # Too few samples for the ranks is about the job, not an argument's type.
    if size < 2:
        pytest.skip("needs two ranks")
    with pytest.raises(tnt.Error):
        model().fit(torch.zeros(1, 3), torch.zeros(1, 2), verbose=0)


def test_compile_settings_out_of_range_are_value_errors():
    for setting, text in [({"num_inputs": 0}, "num_inputs must be at least 1"),
                          ({"aggregation_frequency": 0}, "aggregation_frequency"),
                          ({"clip_norm": -1.0}, "clip_norm must be positive"),
                          ({"clip_value": 0.0}, "clip_value must be positive"),
                          ({"deterministic": 0}, "chunk size must be at least 1"),
                          ({"fusion_threshold_bytes": -5}, "fusion_threshold_bytes=-5")]:
        raises(ValueError, text,
               call=lambda: model(False).compile(loss="mse", **setting))  # noqa: B023
    if not torch.cuda.is_available():  # float16 autocast is a GPU's
        raises(ValueError, "mixed_precision='bfloat16'",
               call=lambda: model(False).compile(loss="mse", mixed_precision="float16"))


def test_a_loss_that_is_not_the_batchs_mean_is_refused():
    # The engine weights each rank's mean by its share: a sum would train
    # 1/N as fast at N ranks, and 'none' fail later without saying why.
    for reduction in ("sum", "none"):
        raises(ValueError, f"reduction='{reduction}'", "reduction='mean'",
               call=lambda: model(False).compile(  # noqa: B023
                   loss=torch.nn.MSELoss(reduction=reduction)))
    # KLDivLoss's 'batchmean' (the true divergence) is a mean over samples.
    model(False).compile(loss=torch.nn.KLDivLoss(reduction="batchmean"))


def test_fit_steps_epochs_and_validation_out_of_range_are_value_errors():
    x, y = data()
    for steps in (0, -1):
        raises(ValueError, f"steps_per_epoch={steps}", "None",
               call=lambda: model().fit(x, y, steps_per_epoch=steps, verbose=0))  # noqa: B023
    raises(ValueError, "initial_epoch=-1",
           call=lambda: model().fit(x, y, initial_epoch=-1, verbose=0))
    raises(ValueError, "validation_batch_size=0", call=lambda: model().fit(
        x, y, validation_data=(x, y), validation_batch_size=0, verbose=0))
    # Keras's (x, y, sample_weight): the weights were dropped silently.
    raises(ValueError, "sample_weight", call=lambda: model().fit(
        x, y, validation_data=(x, y, torch.ones(12)), verbose=0))
    raises(ValueError, "tnt_micro_batch_size", "batch_size=",
           call=lambda: model().fit(x, y, batch_size=8, tnt_micro_batch_size=3, verbose=0))


class TwoInputs(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b = torch.nn.Linear(3, 2), torch.nn.Linear(3, 2)

    def forward(self, a, b):
        return self.a(a) + self.b(b)


def test_a_list_of_inputs_needs_as_many_num_inputs():
    # fit([x1, x2], y) as for a Keras model of two inputs: with num_inputs=1
    # forward got x1, x2 was taken as the target, and y was dropped.
    x, y = data()
    m = tnt.Model(TwoInputs())
    m.compile(optimizer="sgd", loss="mse")
    raises(ValueError, "2 inputs", "num_inputs=1", "num_inputs=2",
           call=lambda: m.fit([x, x], y, batch_size=4, verbose=0))
    raises(ValueError, "num_inputs=2", call=lambda: m.evaluate((x, x), y, batch_size=4))
    m.compile(optimizer=torch.optim.SGD(m.module.parameters(), lr=0.0), loss="mse",
              num_inputs=2)
    with torch.no_grad():
        expected = torch.nn.functional.mse_loss(m.module(x.to(m.device), x.to(m.device)).cpu(), y)
    assert m.evaluate([x, x], y, batch_size=4) == pytest.approx(expected.item(), rel=1e-5)
    # Validation data as (x1, x2, y) is a model of 2 inputs', not Keras's weights.
    history = m.fit([x, x], y, batch_size=4, validation_data=(x, x, y), verbose=0)
    assert history.history["val_loss"][0] == pytest.approx(expected.item(), rel=1e-5)


def test_dataset_argument_mistakes_are_value_errors():
    # As batch_size=0 of fit: the data pipeline's checks name the value.
    ds = tnt.data.Dataset.from_tensor_slices([torch.zeros(8, 2)])
    raises(ValueError, "batch_size 0", call=lambda: ds.batch(0))
    raises(ValueError, "buffer_size 0", call=lambda: ds.shuffle(0))
    raises(ValueError, "take: count -5", call=lambda: ds.take(-5))

