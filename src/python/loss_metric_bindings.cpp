// Python callables as the engine's loss and metrics (tnt::losses::Loss,
// tnt::metrics::Metric): each call takes the GIL, and anything but a tensor
// coming back is a tnt::Error naming what returned it and what it must
// return. Also binds the Loss and Metric handles that compile() takes; the
// named ones come from the Keras registries (registry_bindings.cpp).
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <tarantella/base/error.h>
#include <tarantella/keras/losses.h>
#include <tarantella/keras/metrics.h>

#include "python/bindings.h"
#include "python/py_object.h"

namespace tnt::python {
namespace {

// Calls a Python (y_pred, y_true) -> tensor under the GIL; anything but a
// tensor is an Error naming `what` returned it and what it must return.
torch::Tensor call_for_tensor(const SharedPyObject& fn, const torch::Tensor& y_pred,
                              const torch::Tensor& y_true, const std::string& what,
                              const char* must) {
  py::gil_scoped_acquire gil;
  const py::object out = (*fn)(y_pred, y_true);
  TNT_CHECK(THPVariable_Check(out.ptr()), what, " returned a ", type_name_of(out),
            ", it must return ", must);
  return out.cast<torch::Tensor>();
}

// A Python callable as a loss (y_pred, y_true) -> mean loss.
// `binary_threshold`: where its binary predictions decide (0 for
// BCEWithLogitsLoss, 0.5 for BCELoss; see losses.h), for Accuracy.
losses::Loss loss_from_callable(py::object fn, std::string name,
                                std::optional<double> binary_threshold) {
  SharedPyObject held = share_object(std::move(fn));
  losses::Loss loss(
      std::move(name), [held](const torch::Tensor& y_pred, const torch::Tensor& y_true) {
        return call_for_tensor(held, y_pred, y_true, "the loss",
                               "a scalar torch.Tensor (the mean loss of the batch)");
      });
  loss.binary_threshold = binary_threshold;
  return loss;
}

// A Python callable as a metric: update(y_pred, y_true) -> state tensor of
// `state_size` values summed over batches and ranks; result(list) -> float.
metrics::Metric metric_from_callables(std::string name, py::object update, py::object result,
                                      std::int64_t state_size) {
  SharedPyObject u = share_object(std::move(update));
  SharedPyObject r = share_object(std::move(result));
  metrics::Metric m;
  m.name = std::move(name);
  m.state_size = state_size;
  m.update = [u, what = "metric '" + m.name + "'"](const torch::Tensor& y_pred,
                                                   const torch::Tensor& y_true) {
    return call_for_tensor(u, y_pred, y_true, what, "a torch.Tensor of its state values");
  };
  m.result = [r](const std::vector<double>& state) {
    py::gil_scoped_acquire gil;
    return (*r)(state).cast<double>();
  };
  return m;
}

// A Python callable (y_pred, y_true) -> per-sample values as a metric: their
// mean over all samples of all ranks (Metric::mean_of).
metrics::Metric metric_mean_of(std::string name, py::object fn) {
  SharedPyObject held = share_object(std::move(fn));
  const std::string what = "metric '" + name + "'";
  return metrics::Metric::mean_of(
      std::move(name), [held, what](const torch::Tensor& y_pred, const torch::Tensor& y_true) {
        return call_for_tensor(held, y_pred, y_true, what, "a torch.Tensor of per-sample values");
      });
}

}  // namespace

void bind_losses_and_metrics(py::module_& m) {
  py::class_<losses::Loss>(m, "Loss").def_readonly("name", &losses::Loss::name);
  m.def("loss_from_callable", &loss_from_callable, py::arg("fn"), py::arg("name"),
        py::arg("binary_threshold") = py::none());
  py::class_<metrics::Metric>(m, "Metric").def_readonly("name", &metrics::Metric::name);
  m.def("metric_from_callables", &metric_from_callables, py::arg("name"), py::arg("update"),
        py::arg("result"), py::arg("state_size"));
  m.def("metric_mean_of", &metric_mean_of, py::arg("name"), py::arg("fn"));
}

}  // namespace tnt::python
