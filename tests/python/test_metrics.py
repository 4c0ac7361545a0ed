"""Your own metrics from Python (tnt.metrics): a callable of per-sample
values and a metric from summed state give, in fit's logs and evaluate's
results, the global value over all samples of all ranks, as one process
computes it on the whole data set; bad metrics are tnt.Errors."""
import pytest
import torch

import tarantella as tnt


def data(n=45):
    g = torch.Generator().manual_seed(1)
    return torch.randn(n, 4, generator=g), torch.randint(0, 3, (n,), generator=g)


def abs_logit(y_pred, y_true):
    return y_pred.gather(1, y_true.view(-1, 1)).abs()   # one value per sample


hits = tnt.metrics.from_state(
    "hits", lambda y_pred, y_true: torch.tensor(
        [float((y_pred.argmax(1) == y_true).sum()), float(y_true.numel())]),
    lambda state: state[0] / state[1], state_size=2)


def model_and_reference():
    x, y = data()
    torch.manual_seed(2)
    net = torch.nn.Linear(4, 3)
    with torch.no_grad():
        out = net(x)
    reference = {"abs_logit": abs_logit(out, y).mean().item(),
                 "hits": (out.argmax(1) == y).double().mean().item()}
    model = tnt.Model(net)
    model.compile(optimizer=torch.optim.SGD(net.parameters(), lr=0.0),   # weights stay
                  loss=torch.nn.CrossEntropyLoss(), metrics=[abs_logit, hits, "accuracy"])
    return model, x, y, reference


def test_fit_logs_and_evaluate_give_the_global_value():
    model, x, y, reference = model_and_reference()
    history = model.fit(x, y, batch_size=8, epochs=1, shuffle=False, verbose=0)  # last batch 5
    for name, value in reference.items():
        assert history.history[name][0] == pytest.approx(value, rel=1e-6), name
    loss, mean_abs, hit_rate, accuracy = model.evaluate(x, y, batch_size=10)
    assert mean_abs == pytest.approx(reference["abs_logit"], rel=1e-6)
    assert hit_rate == pytest.approx(reference["hits"], rel=1e-12)
    assert accuracy == pytest.approx(reference["hits"], rel=1e-12)
    gathered = tnt.allgather(torch.tensor([[mean_abs, hit_rate]], dtype=torch.float64))
    assert torch.equal(gathered.min(0).values, gathered.max(0).values)   # the same on every rank


def test_a_named_lambda_and_bad_metrics_are_explained():
    assert tnt.metrics.mean_of(lambda p, t: p, name="raw").name == "raw"
    with pytest.raises(TypeError, match="metrics must be a name such as 'accuracy'.*got 3"):
        tnt.Model(torch.nn.Linear(4, 3)).compile(loss="mse", metrics=[3])
    with pytest.raises(ValueError, match="state_size=0 is invalid"):
        tnt.metrics.from_state("s", abs_logit, float, 0)
    x, y = data()
    net = torch.nn.Linear(4, 3)
    model = tnt.Model(net)
    model.compile(loss=torch.nn.CrossEntropyLoss(), metrics=[lambda p, t: 1.0])
    with pytest.raises(tnt.Error, match="metric '<lambda>' returned a float, it must return a "
                                        "torch.Tensor of per-sample values"):
        model.evaluate(x, y, batch_size=9)


def test_accuracy_of_one_output_decides_where_the_loss_does():
    # A logits loss (BCEWithLogitsLoss, 'binary_crossentropy': logits by
    # default) decides at 0, as its sigmoid does at 0.5: a logit of 0.25 for
    # target 1 is a hit. Probabilities and other losses decide at 0.5; a
    # threshold given to BinaryAccuracy stays.
    x, y = torch.zeros(8, 4), torch.ones(8, 1)

    def accuracies(loss, metrics):
        net = torch.nn.Linear(4, 1)
        with torch.no_grad():
            net.weight.zero_()
            net.bias.fill_(0.25)
        model = tnt.Model(net)
        model.compile(optimizer=torch.optim.SGD(net.parameters(), lr=0.0), loss=loss,
                      metrics=metrics)
        return model.evaluate(x, y, batch_size=8)[1:]

    both = ["accuracy", "binary_accuracy"]
    assert accuracies(torch.nn.BCEWithLogitsLoss(), both) == [1.0, 1.0]
    assert accuracies("binary_crossentropy", both) == [1.0, 1.0]
    assert accuracies(torch.nn.MSELoss(), both) == [0.0, 0.0]
    assert accuracies(torch.nn.BCELoss(), both) == [0.0, 0.0]  # 0.25 as a probability
