// tnt.nn for Python modules: the C++ core of tnt.nn.SyncBatchNorm
// (py_collective.h explains the split; python/tarantella/nn.py is the
// torch.nn.Module around it and convert_sync_batchnorm).
#include <tarantella/base/error.h>

#include "python/bindings.h"
#include "python/py_collective.h"

namespace tnt::python {

CollectiveLayer::CollectiveLayer(comm::ProcessGroup group)
    : torch::nn::Module("tnt.nn.CollectiveLayer") {
  set_group(std::move(group));
}

void CollectiveLayer::set_group(comm::ProcessGroup group) {
  given_ = group.valid();
  set_process_group(std::move(group));
}

torch::Tensor CollectiveLayer::sync_batch_norm(const torch::Tensor& input,
                                               std::int64_t num_features,
                                               const std::optional<torch::Tensor>& weight,
                                               const std::optional<torch::Tensor>& bias,
                                               const std::optional<torch::Tensor>& running_mean,
                                               const std::optional<torch::Tensor>& running_var,
                                               bool training, double momentum, double eps) const {
  // The message of tnt::nn::SyncBatchNorm::forward.
  TNT_CHECK(input.dim() >= 2 && input.size(1) == num_features,
            "SyncBatchNorm(num_features=", num_features, ") needs inputs [batch, ", num_features,
            ", ...], got ", input.sizes());
  const auto or_undefined = [](const std::optional<torch::Tensor>& t) {
    return t ? *t : torch::Tensor();
  };
  py::gil_scoped_release no_gil;  // training forward is an allreduce
  return nn::sync_batch_norm(input, or_undefined(weight), or_undefined(bias),
                             or_undefined(running_mean), or_undefined(running_var), training,
                             momentum, eps, process_group());
}

std::vector<std::shared_ptr<torch::nn::Module>> collective_layers_of(const py::object& module) {
  std::vector<std::shared_ptr<torch::nn::Module>> out;
  if (!py::hasattr(module, "modules")) return out;
  for (const py::handle layer : module.attr("modules")()) {
    const py::object core = py::getattr(layer, "_tnt_collective", py::none());
    if (py::isinstance<CollectiveLayer>(core)) {
      out.push_back(core.cast<std::shared_ptr<CollectiveLayer>>());
    }
  }
  return out;
}

namespace {

// A copy keeps a given group; one that follows the model's group follows
// the next model's. Pickles carry no group (a group lives in one job).
std::shared_ptr<CollectiveLayer> copy_of(const CollectiveLayer& layer) {
  auto copy = std::make_shared<CollectiveLayer>();
  if (layer.group_given()) {
    copy->set_group(layer.process_group());
  } else if (layer.process_group().valid()) {
    copy->use_model_group(layer.process_group());
  }
  return copy;
}

}  // namespace

void bind_nn(py::module_& m) {
  py::class_<CollectiveLayer, std::shared_ptr<CollectiveLayer>>(
      m, "CollectiveLayer",
      "The C++ core of a Python layer that communicates (tnt.nn.SyncBatchNorm): its process "
      "group, which tnt.Model binds, and the arithmetic.")
      .def(py::init([](std::optional<comm::ProcessGroup> group) {
             return std::make_shared<CollectiveLayer>(group.value_or(comm::ProcessGroup()));
           }),
           py::arg("group") = py::none())
      .def_property_readonly("group", &CollectiveLayer::process_group,
                             "The group it normalizes over; empty until a tnt.Model binds it "
                             "(then the world group is used) unless one was given.")
      .def_property_readonly("group_given", &CollectiveLayer::group_given)
      .def("set_group", &CollectiveLayer::set_group, py::arg("group"))
      .def("sync_batch_norm", &CollectiveLayer::sync_batch_norm, py::arg("input"),
           py::arg("num_features"), py::arg("weight"), py::arg("bias"), py::arg("running_mean"),
           py::arg("running_var"), py::arg("training"), py::arg("momentum"), py::arg("eps"))
      .def("__copy__", [](const CollectiveLayer& l) { return copy_of(l); })
      .def("__deepcopy__", [](const CollectiveLayer& l, py::dict) { return copy_of(l); })
      .def(py::pickle([](const CollectiveLayer&) { return py::tuple(); },
                      [](const py::tuple&) { return std::make_shared<CollectiveLayer>(); }));

  // The option checks of tnt::nn::SyncBatchNorm, by building one: the same
  // messages from the same code.
  m.def("check_sync_batchnorm_options", [](std::int64_t num_features, double eps) {
    nn::SyncBatchNormImpl check(nn::SyncBatchNormOptions(num_features).eps(eps));
  });
}

}  // namespace tnt::python
