"""One source for every default: an option Python leaves out takes the C++
options struct's default (src/python/options.h), names of optimizers, losses
and metrics go through the C++ Keras registry (Keras's short names are its
aliases), and unknown names and keywords are errors naming them.

Nothing here needs another rank; every rank runs the same checks."""
import ast
import json
import os

import pytest
import torch

import tarantella as tnt
from tarantella import _tarantella as _t

OPTIMIZERS = {"adam": "Adam", "adamw": "AdamW", "rmsprop": "RMSprop", "adagrad": "Adagrad"}
CALLBACKS = ["Callback", "ModelCheckpoint", "EarlyStopping", "CSVLogger", "TensorBoard",
             "LearningRateScheduler", "ReduceLROnPlateau", "BackupAndRestore", "ProgbarLogger",
             "RemoteMonitor"]
# The options structs bound from their C++ field lists (src/python/options.h).
OPTIONS = ["CompileOptions", "FitOptions", "EvaluateOptions", "PredictOptions",
           "EarlyStoppingOptions", "CSVLoggerOptions", "LearningRateSchedulerOptions",
           "ReduceLROnPlateauOptions", "BackupAndRestoreOptions", "ProgbarLoggerOptions",
           "RemoteMonitorOptions"]


def config_of(factory):
    return json.loads(factory.config)


def test_an_optimizer_by_name_is_the_cpp_options_structs_defaults():
    for name, cls in OPTIMIZERS.items():
        for spelling in (name, cls):  # Keras's name and the class name
            config = config_of(_t.optimizer_by_name(spelling))
            assert config["class_name"] == cls
            assert config["config"] == _t.option_defaults(cls), spelling
    sgd = config_of(_t.optimizer_by_name("SGD"))  # any case: "sgd"
    assert sgd["class_name"] == "SGD" and sgd["config"]["momentum"] == 0.0


def test_compile_by_name_trains_with_the_cpp_learning_rate():
    model = tnt.Model(torch.nn.Linear(3, 2))
    model.compile(optimizer="adam", loss="mse")
    assert model.learning_rate == _t.option_defaults("Adam")["learning_rate"]
    model.compile(optimizer="sgd", loss="mse")
    assert model.learning_rate == config_of(_t.optimizer_by_name("sgd"))["config"]["learning_rate"]


def test_an_option_left_out_keeps_the_cpp_default_and_adam_and_adamw_take_the_same_keywords():
    adam = config_of(_t.optimizer_adam(beta_2=0.98))["config"]
    assert adam == dict(_t.option_defaults("Adam"), beta_2=0.98)
    given = dict(learning_rate=0.5, beta_1=0.8, beta_2=0.9, epsilon=1e-6, weight_decay=0.1)
    assert config_of(_t.optimizer_adam(**given))["config"] == given
    assert config_of(_t.optimizer_adamw(**given))["config"] == given


def test_torch_optimizers_cross_with_every_hyper_parameter():
    net = torch.nn.Linear(3, 2)
    model = tnt.Model(net)
    model.compile(optimizer=torch.optim.AdamW(net.parameters(), lr=0.02, betas=(0.7, 0.8),
                                              eps=1e-5, weight_decay=0.3), loss="mse")
    assert model.learning_rate == pytest.approx(0.02)


def test_unknown_or_ill_typed_keywords_are_type_errors_naming_them():
    with pytest.raises(TypeError, match="beta2.*beta_2"):
        _t.optimizer_adam(beta2=0.9)
    with pytest.raises(TypeError, match="epsilon must be a number"):
        _t.optimizer_adam(epsilon="small")
    with pytest.raises(TypeError, match="patince.*patience"):
        tnt.callbacks.EarlyStopping(patince=3)
    with pytest.raises(TypeError, match="patience must be an int"):
        tnt.callbacks.EarlyStopping(patience=2.5)
    with pytest.raises(TypeError, match="append must be True or False"):
        tnt.callbacks.CSVLogger("log.csv", append=1)
    with pytest.raises(TypeError):  # options are keyword-only
        tnt.callbacks.EarlyStopping("loss")
    with pytest.raises(ValueError, match="mode='bigger'.*'max'"):
        tnt.callbacks.ReduceLROnPlateau(mode="bigger")


def test_callbacks_take_keywords_named_as_their_options_fields():
    tnt.callbacks.EarlyStopping(monitor="loss", patience=3, mode="min", baseline=None,
                                restore_best_weights=True)
    tnt.callbacks.ModelCheckpoint("ckpt-{epoch}.pt", save_best_only=True, mode="max")
    tnt.callbacks.TensorBoard(update_freq=5, write_steps_per_second=True)
    tnt.callbacks.BackupAndRestore("backup", save_freq=10, delete_checkpoint=False)
    tnt.callbacks.ProgbarLogger(verbose=2, live=False)
    tnt.callbacks.RemoteMonitor(headers={"X-Run": "1"}, timeout_seconds=2)
    assert tnt.callbacks.option_defaults("TensorBoard")["update_freq"] == "epoch"
    with pytest.raises(ValueError, match="NoSuchCallback"):
        tnt.callbacks.option_defaults("NoSuchCallback")


def test_python_callbacks_take_the_cpp_base_defaults():
    base = tnt.callbacks.option_defaults("Callback")
    callback = tnt.callbacks.Callback()
    assert callback.aggregate_logs == base["aggregate_logs"]
    assert callback.run_on_all_ranks == base["run_on_all_ranks"]
    assert tnt.callbacks.LambdaCallback(aggregate_logs=False).aggregate_logs is False


def test_losses_and_metrics_by_name_are_the_registrys():
    assert _t.loss_by_name("mse").name == _t.loss_by_name("MeanSquaredError").name
    assert _t.loss_by_name("sparse_categorical_crossentropy").name == \
        "sparse_categorical_crossentropy"
    assert _t.metric_by_name("acc").name == _t.metric_by_name("accuracy").name
    assert _t.metric_by_name("mae").name == _t.metric_by_name("MeanAbsoluteError").name
    with pytest.raises(ValueError, match="loss='no_such_loss'.*mse"):
        _t.loss_by_name("no_such_loss")
    with pytest.raises(ValueError, match="'no_such_metric'.*accuracy"):
        _t.metric_by_name("no_such_metric")
    with pytest.raises(ValueError, match="optimizer='adamax'.*sgd"):
        _t.optimizer_by_name("adamax")


def stub_keywords():
    """Each stub function's and __init__'s parameters that have a default."""
    path = os.path.join(os.path.dirname(tnt.__file__), "_tarantella", "__init__.pyi")
    with open(path) as f:
        tree = ast.parse(f.read())
    out = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == "__init__":
                    out[node.name] = item.args
        elif isinstance(node, ast.FunctionDef) and node.name.startswith("optimizer_"):
            out[node.name] = node.args
    keywords = {}
    for name, args in out.items():
        positional = args.posonlyargs + args.args
        with_default = positional[len(positional) - len(args.defaults):] if args.defaults else []
        keywords[name] = {a.arg for a in with_default} | {a.arg for a in args.kwonlyargs}
    return keywords


def test_the_stubs_list_exactly_the_cpp_fields():
    keywords = stub_keywords()
    for name in CALLBACKS[1:]:
        assert keywords[name] == set(_t.option_defaults(name)), name
    for name, cls in OPTIMIZERS.items():
        assert keywords[f"optimizer_{name}"] == set(_t.option_defaults(cls)), name


def test_the_options_structs_are_their_field_lists_in_python_and_in_the_stubs():
    keywords = stub_keywords()
    for name in OPTIONS:
        assert keywords[name] == set(getattr(_t, name)().to_dict()), name
    early = tnt.callbacks.EarlyStoppingOptions(patience=3, mode="min")
    early.patience = 5
    assert early.to_dict() == {**tnt.callbacks.option_defaults("EarlyStopping"),
                               "patience": 5, "mode": "min"}
    with pytest.raises(TypeError, match="patience must be an int, got 2.5"):
        early.patience = 2.5
    with pytest.raises(ValueError, match="mode='bigger'.*'max'"):
        early.mode = "bigger"
    with pytest.raises(TypeError, match="epochs must be an int, got 2.5"):
        _t.FitOptions(epochs=2.5)
    with pytest.raises(ValueError, match="mixed_precision='fp8'.*bfloat16"):
        _t.CompileOptions(mixed_precision="fp8")
    fit = _t.FitOptions(epochs=3, validation_steps=2)
    assert (fit.epochs, fit.validation_steps, fit.verbose) == (3, 2, _t.FitOptions().verbose)
    # A callback takes its struct as it takes the keywords.
    tnt.callbacks.EarlyStopping(early)
    tnt.callbacks.CSVLogger("log.csv", tnt.callbacks.CSVLoggerOptions(append=True))
    tnt.callbacks.LearningRateScheduler(lambda epoch, lr: lr,
                                        tnt.callbacks.LearningRateSchedulerOptions(verbose=1))
