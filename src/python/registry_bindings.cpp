// The Keras registries for Python's compile(): the built-in optimizers from
// keyword arguments named as their options structs' fields (options.h),
// optimizers, losses and metrics by name, one optimizer over torch.optim's
// parameter groups, and option_defaults(name). The Loss and Metric handles
// themselves are bound in loss_metric_bindings.cpp, before this.
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <tarantella/base/argument_error.h>
#include <tarantella/base/error.h>
#include <tarantella/base/torch_compat.h>
#include <tarantella/keras/losses.h>
#include <tarantella/keras/metrics.h>
#include <tarantella/keras/optimizers.h>

#include "python/bindings.h"
#include "python/options.h"

namespace tnt::python {
namespace {

// One optimizer with a parameter group per torch.optim group: each group's
// factory (the same rule, that group's hyper-parameters) over the positions
// `indices[g]` of the engine's trainable parameters (the module's
// parameters() order, those that require grad).
optimizers::Factory grouped_optimizer(std::vector<optimizers::Factory> per_group,
                                      std::vector<std::vector<std::int64_t>> indices) {
  TNT_CHECK(!per_group.empty() && per_group.size() == indices.size(),
            "grouped optimizer: ", per_group.size(), " factories for ", indices.size(),
            " groups of parameters");
  return optimizers::Factory([per_group = std::move(per_group), indices = std::move(indices)](
                                 const std::vector<torch::Tensor>& params) {
    auto pick = [&](std::size_t g) {
      std::vector<torch::Tensor> out;
      for (const std::int64_t i : indices[g]) {
        TNT_CHECK(i >= 0 && i < static_cast<std::int64_t>(params.size()),
                  "grouped optimizer: parameter ", i, " of group ", g, " is not one of the ",
                  params.size(), " trainable parameters");
        out.push_back(params[static_cast<std::size_t>(i)]);
      }
      return out;
    };
    std::unique_ptr<torch::optim::Optimizer> optimizer = per_group[0](pick(0));
    for (std::size_t g = 1; g < per_group.size(); ++g) {
      const std::vector<torch::Tensor> mine = pick(g);
      const std::unique_ptr<torch::optim::Optimizer> like = per_group[g](mine);
      compat::add_param_group_exact(*optimizer, mine, like->param_groups()[0].options());
    }
    return optimizer;
  });
}

// get(name) of the Keras registry, with an unknown name's message prefixed
// by `where` and followed by what else the Python call takes.
template <typename Get>
auto by_name(const std::string& name, Get get, const char* where, const char* alternatives) {
  try {
    return get(name);
  } catch (const ArgumentError& e) {
    throw ArgumentError(detail::concat(where, e.what(), alternatives));
  }
}

// optimizer_<name>(**options): the built-in optimizer from keyword
// arguments named as its options struct's fields (options.h), so every
// default is the struct's.
template <typename Options>
void bind_optimizer_factory(py::module_& m, const char* function, const char* name,
                            optimizers::Factory (*make)(Options)) {
  m.def(function, [name, make](const py::kwargs& kwargs) {
    return make(with_kwargs(std::string(name) + "()", Options(), kwargs));
  });
  register_defaults_of(name, Options());
}

}  // namespace

void bind_registries(py::module_& m) {
  py::class_<optimizers::Factory>(m, "OptimizerFactory")
      .def_readonly("config", &optimizers::Factory::config);
  using F = optimizers::Factory;
  // SGD's learning rate is required (it has no default in C++).
  m.def(
      "optimizer_sgd",
      [](double learning_rate, const py::kwargs& kwargs) {
        return optimizers::SGD(with_kwargs("SGD()", optimizers::SGDOptions(learning_rate), kwargs));
      },
      py::arg("learning_rate"));
  bind_optimizer_factory<optimizers::AdamOptions>(
      m, "optimizer_adam", "Adam", static_cast<F (*)(optimizers::AdamOptions)>(&optimizers::Adam));
  bind_optimizer_factory<optimizers::AdamWOptions>(
      m, "optimizer_adamw", "AdamW",
      static_cast<F (*)(optimizers::AdamWOptions)>(&optimizers::AdamW));
  bind_optimizer_factory<optimizers::RMSpropOptions>(
      m, "optimizer_rmsprop", "RMSprop",
      static_cast<F (*)(optimizers::RMSpropOptions)>(&optimizers::RMSprop));
  bind_optimizer_factory<optimizers::AdagradOptions>(
      m, "optimizer_adagrad", "Adagrad",
      static_cast<F (*)(optimizers::AdagradOptions)>(&optimizers::Adagrad));
  m.def("optimizer_by_name", [](const std::string& name) {
    return by_name(name, optimizers::get, "compile(): ", "; or a torch.optim optimizer");
  });
  m.def("optimizer_grouped", &grouped_optimizer, py::arg("per_group"), py::arg("indices"));

  m.def("loss_by_name", [](const std::string& name) {
    return by_name(name, losses::get, "compile(): ",
                   "; or a torch loss module, or a callable (y_pred, y_true) -> mean loss");
  });

  m.def("metric_by_name", [](const std::string& name) {
    return by_name(name, metrics::get, "compile(): metrics: ",
                   "; or a tnt.metrics.Metric, or a callable (y_pred, y_true) -> per-sample "
                   "values");
  });
  m.def("option_defaults", &option_defaults, py::arg("name"));
}

}  // namespace tnt::python
