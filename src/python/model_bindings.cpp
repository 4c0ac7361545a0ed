// The Model facade for Python: tnt.Model over a torch.nn.Module drives the
// same training engine as the C++ tnt::Model (train/engine.h: the epoch
// loop, validation, the stop vote, callbacks, checkpoints, resume). What is
// Python's is adapted here, at the edges, and nothing else:
//  * the network: PyModule, a ModuleAdapter whose forward calls the Python
//    module under the GIL (parameters and buffers are the module's own
//    tensors, shared without copies, so the optimizer and the gradient hooks
//    work on them directly);
//  * the loss: a torch loss module or any callable, called under the GIL;
//  * callbacks: PyCallback, a trampoline that calls a Python object's Keras
//    hooks under the GIL; the built-ins are the C++ ones (callback_bindings);
//  * data: dataset_from_data (py_dataset.h): the data arrive as the user
//    gave them, with the global batch size, and become a Dataset here.
// The loops run with the GIL released; Python is entered only from the
// thread that called fit/evaluate/predict, which holds it again there.
// PyModel holds the engine with its callbacks' host (train/engine_host.h),
// as tnt::Model does; persistence is the component both use
// (train/persistence.h), so a checkpoint written from Python loads in C++
// and the reverse.
#include <array>
#include <sstream>

#include <tarantella/base/torch_compat.h>
#include <tarantella/base/argument_error.h>
#include <tarantella/base/default_seed.h>
#include <tarantella/base/error.h>
#include <tarantella/callbacks/builtins.h>
#include <tarantella/runtime/runtime.h>

#include "python/bindings.h"
#include "python/options.h"
#include "python/py_collective.h"
#include "python/py_dataset.h"
#include "python/py_object.h"
#include "runtime/default_group.h"
#include "train/engine_host.h"
#include "train/persistence.h"

namespace tnt::python {
namespace {

std::string type_name_of(const py::handle& object) {
  return py::str(py::type::handle_of(object).attr("__name__"));
}

// A Python torch.nn.Module as the engine's network.
class PyModule final : public ModuleAdapter {
 public:
  explicit PyModule(py::object module) : module_(share_object(std::move(module))) {}

  torch::Tensor forward(const std::vector<torch::Tensor>& inputs) override {
    py::gil_scoped_acquire gil;
    py::tuple args(inputs.size());
    for (std::size_t i = 0; i < inputs.size(); ++i) args[i] = py::cast(inputs[i]);
    const py::object out = (*module_)(*args);
    TNT_CHECK(THPVariable_Check(out.ptr()), "the model's forward returned a ",
              type_name_of(out), ", tnt.Model needs one torch.Tensor: return the output tensor "
              "(a model with several outputs can return torch.cat or a stacked tensor)");
    return out.cast<torch::Tensor>();
  }
  NamedTensorList named_parameters() override { return named("named_parameters"); }
  NamedTensorList named_buffers() override { return named("named_buffers"); }
  void train(bool on) override {
    py::gil_scoped_acquire gil;
    module_->attr("train")(on);
  }
  void to(const torch::Device& device) override {
    py::gil_scoped_acquire gil;
    module_->attr("to")(device.str());
  }
  std::string type_name() const override {
    py::gil_scoped_acquire gil;
    return type_name_of(*module_);
  }
  // The C++ cores of the module's collective layers (py_collective.h): the
  // engine gives them the model's group and, because they exist, runs
  // forward and backward on empty micro-batches too.
  std::vector<std::shared_ptr<torch::nn::Module>> modules() override {
    py::gil_scoped_acquire gil;
    return collective_layers_of(*module_);
  }
  std::vector<std::pair<std::string, std::string>> named_module_types() override {
    py::gil_scoped_acquire gil;
    std::vector<std::pair<std::string, std::string>> out;
    for (const py::handle item : module_->attr("named_modules")()) {
      const auto pair = item.cast<py::tuple>();
      out.emplace_back(pair[0].cast<std::string>(), type_name_of(pair[1]));
    }
    return out;
  }
  std::shared_ptr<ModuleAdapter> clone() const override {
    py::gil_scoped_acquire gil;
    return std::make_shared<PyModule>(py::module_::import("copy").attr("deepcopy")(*module_));
  }
  const py::object& module() const { return *module_; }

 private:
  NamedTensorList named(const char* method) {
    py::gil_scoped_acquire gil;
    NamedTensorList out;
    for (const py::handle item : module_->attr(method)()) {
      const auto pair = item.cast<py::tuple>();
      out.emplace_back(pair[0].cast<std::string>(), pair[1].cast<torch::Tensor>());
    }
    return out;
  }
  SharedPyObject module_;
};

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
losses::Loss loss_from_callable(py::object fn, std::string name) {
  SharedPyObject held = share_object(std::move(fn));
  return losses::Loss(
      std::move(name), [held](const torch::Tensor& y_pred, const torch::Tensor& y_true) {
        return call_for_tensor(held, y_pred, y_true, "the loss",
                               "a scalar torch.Tensor (the mean loss of the batch)");
      });
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

// The Keras hooks a Python callback may have, in kHookNames' order.
enum Hook : std::size_t {
  kTrainBegin,
  kTrainEnd,
  kEpochBegin,
  kEpochEnd,
  kTrainBatchBegin,
  kTrainBatchEnd,
  kTestBegin,
  kTestEnd,
  kTestBatchBegin,
  kTestBatchEnd,
  kPredictBegin,
  kPredictEnd,
  kPredictBatchBegin,
  kPredictBatchEnd,
  kHookCount
};
constexpr std::array<const char*, kHookCount> kHookNames = {
    "on_train_begin",         "on_train_end",        "on_epoch_begin",   "on_epoch_end",
    "on_train_batch_begin",   "on_train_batch_end",  "on_test_begin",    "on_test_end",
    "on_test_batch_begin",    "on_test_batch_end",   "on_predict_begin", "on_predict_end",
    "on_predict_batch_begin", "on_predict_batch_end"};

// Which hooks `object` implements: those it has, except the no-ops it
// inherits from tnt.callbacks.Callback (a method whose function is the base
// class's own). Hooks set on the instance (LambdaCallback) count.
std::array<bool, kHookCount> implemented_hooks(const py::object& object) {
  const py::object base = py::module_::import("tarantella.callbacks").attr("Callback");
  std::array<bool, kHookCount> out{};
  for (std::size_t h = 0; h < kHookCount; ++h) {
    const py::object fn = py::getattr(object, kHookNames[h], py::none());
    const py::object func = py::getattr(fn, "__func__", py::none());
    out[h] = !fn.is_none() && !func.is(base.attr("__dict__")[kHookNames[h]]);
  }
  return out;
}

// Keras hooks of a Python object, called under the GIL. Which hooks the
// object implements is decided once, when fit/evaluate/predict starts: the
// others return at once, without taking the GIL, so a callback with only
// on_epoch_end costs nothing per step.
class PyCallback final : public callbacks::Callback {
 public:
  using Logs = callbacks::Logs;
  explicit PyCallback(py::object object)
      : object_(share_object(std::move(object))), hooks_(implemented_hooks(*object_)) {
    // An object without the attributes keeps callbacks::Callback's defaults.
    aggregate_logs =
        py::getattr(*object_, "aggregate_logs", py::bool_(aggregate_logs)).cast<bool>();
    run_on_all_ranks =
        py::getattr(*object_, "run_on_all_ranks", py::bool_(run_on_all_ranks)).cast<bool>();
  }
  // Keras's rule: a callback that implements a batch-end hook gets the
  // batch's logs (a host synchronisation per step on a GPU); one that does
  // not costs none.
  bool wants_batch_logs(std::int64_t) const override {
    return hooks_[kTrainBatchEnd] || hooks_[kTestBatchEnd];
  }
  void on_train_begin(const Logs& l) override { call(kTrainBegin, l); }
  void on_train_end(const Logs& l) override { call(kTrainEnd, l); }
  void on_epoch_begin(std::int64_t e, const Logs& l) override { call(kEpochBegin, e, l); }
  void on_epoch_end(std::int64_t e, const Logs& l) override { call(kEpochEnd, e, l); }
  void on_train_batch_begin(std::int64_t b, const Logs& l) override {
    call(kTrainBatchBegin, b, l);
  }
  void on_train_batch_end(std::int64_t b, const Logs& l) override { call(kTrainBatchEnd, b, l); }
  void on_test_begin(const Logs& l) override { call(kTestBegin, l); }
  void on_test_end(const Logs& l) override { call(kTestEnd, l); }
  void on_test_batch_begin(std::int64_t b, const Logs& l) override { call(kTestBatchBegin, b, l); }
  void on_test_batch_end(std::int64_t b, const Logs& l) override { call(kTestBatchEnd, b, l); }
  void on_predict_begin(const Logs& l) override { call(kPredictBegin, l); }
  void on_predict_end(const Logs& l) override { call(kPredictEnd, l); }
  void on_predict_batch_begin(std::int64_t b, const Logs& l) override {
    call(kPredictBatchBegin, b, l);
  }
  void on_predict_batch_end(std::int64_t b, const Logs& l) override {
    call(kPredictBatchEnd, b, l);
  }

 private:
  template <typename... Args>
  void call(Hook hook, Args&&... args) {
    if (!hooks_[hook]) return;
    py::gil_scoped_acquire gil;
    if (!params_given_) {
      py::dict params;
      params["epochs"] = this->params().epochs;
      params["steps"] = this->params().steps < 0 ? py::object(py::none())
                                                 : py::object(py::int_(this->params().steps));
      params["verbose"] = this->params().verbose;
      object_->attr("params") = params;
      params_given_ = true;
    }
    object_->attr(kHookNames[hook])(std::forward<Args>(args)...);
  }
  SharedPyObject object_;
  std::array<bool, kHookCount> hooks_;
  bool params_given_ = false;
};

std::vector<callbacks::CallbackPtr> to_callbacks(const py::list& list) {
  std::vector<callbacks::CallbackPtr> out;
  for (const py::handle item : list) {
    if (py::isinstance<callbacks::Callback>(item)) {
      out.push_back(item.cast<callbacks::CallbackPtr>());
    } else {
      out.push_back(std::make_shared<PyCallback>(py::reinterpret_borrow<py::object>(item)));
    }
  }
  return out;
}

py::dict to_dict(const std::map<std::string, double>& logs) {
  py::dict d;
  for (const auto& [name, value] : logs) d[py::str(name)] = value;
  return d;
}

std::optional<std::int64_t> optional_int(const py::object& value) {
  if (value.is_none()) return std::nullopt;
  return value.cast<std::int64_t>();
}

// tnt.Model's compiled part; the Python class (python/tarantella/model.py)
// turns Keras's arguments into these.
class PyModel {
 public:
  PyModel(const py::object& module, std::optional<comm::ProcessGroup> group)
      : module_(module), host_(make(module, std::move(group))) {}

  void compile(const optimizers::Factory& optimizer, const losses::Loss& loss,
               const std::vector<metrics::Metric>& metric_list, const py::dict& settings) {
    CompileOptions o;
    o.optimizer(optimizer).loss(loss).metrics(metric_list);
    if (settings.contains("num_inputs")) o.num_inputs(settings["num_inputs"].cast<int>());
    if (settings.contains("aggregation_frequency")) {
      o.aggregation_frequency(settings["aggregation_frequency"].cast<int>());
    }
    if (settings.contains("deterministic")) o.deterministic(settings["deterministic"].cast<std::int64_t>());
    if (settings.contains("shard_optimizer")) o.shard_optimizer(settings["shard_optimizer"].cast<bool>());
    if (settings.contains("clip_norm")) o.clip_norm(settings["clip_norm"].cast<double>());
    if (settings.contains("clip_value")) o.clip_value(settings["clip_value"].cast<double>());
    if (settings.contains("fusion_threshold_bytes")) {
      o.fusion_threshold_bytes(settings["fusion_threshold_bytes"].cast<std::size_t>());
    }
    if (settings.contains("mixed_precision")) {
      o.mixed_precision(compile_name("mixed_precision", settings, mixed_precision_from_name));
    }
    if (settings.contains("compression")) {
      o.compression(compile_name("compression", settings, compression_from_name));
    }
    engine().compile(std::move(o));
  }

  py::dict fit(const py::tuple& train_data, const py::dict& a, const py::list& cbs,
               const std::optional<py::tuple>& validation_data) {
    const data::Dataset train = dataset_from_data(train_data);
    std::optional<data::Dataset> validation;
    if (validation_data) validation = dataset_from_data(*validation_data);
    FitOptions o;
    o.epochs(a["epochs"].cast<std::int64_t>())
        .initial_epoch(a["initial_epoch"].cast<std::int64_t>())
        .steps_per_epoch(optional_int(a["steps_per_epoch"]))
        .validation_freq(a["validation_freq"].cast<std::int64_t>())
        .verbose(a["verbose"].cast<int>())
        .micro_batch_size(optional_int(a["micro_batch_size"]))
        .validation_micro_batch_size(optional_int(a["validation_micro_batch_size"]))
        .distribute_dataset(a["distribute_dataset"].cast<bool>())
        .distribute_validation_dataset(a["distribute_dataset"].cast<bool>())
        .callbacks(to_callbacks(cbs));
    if (validation) o.validation_data(*validation);
    callbacks::History history;
    {
      py::gil_scoped_release release;
      host_.set_stop_requested(false);
      history = engine().fit(train, o, host_.driver());
    }
    py::dict h;
    for (const auto& [name, values] : history.history) h[py::str(name)] = values;
    return h;
  }

  py::dict evaluate(const py::tuple& given, const py::dict& a, const py::list& cbs) {
    const data::Dataset dataset = dataset_from_data(given);
    EvaluateOptions o;
    o.verbose(a["verbose"].cast<int>())
        .micro_batch_size(optional_int(a["micro_batch_size"]))
        .distribute_dataset(a["distribute_dataset"].cast<bool>())
        .callbacks(to_callbacks(cbs));
    std::map<std::string, double> logs;
    {
      py::gil_scoped_release release;
      logs = engine().evaluate(dataset, o, host_.driver());
    }
    return to_dict(logs);
  }

  py::object predict(const py::tuple& given, const py::dict& a, const py::list& cbs) {
    const data::Dataset dataset = dataset_from_data(given);
    PredictOptions o;
    o.micro_batch_size(optional_int(a["micro_batch_size"]))
        .on_all_ranks(a["on_all_ranks"].cast<bool>())
        .callbacks(to_callbacks(cbs));
    torch::Tensor out;
    {
      py::gil_scoped_release release;
      out = engine().predict(dataset, o, host_.driver());
    }
    if (!out.defined()) return py::none();
    return py::cast(out);
  }

  train::EngineHost& host() { return host_; }
  train::Engine& engine() { return host_.engine(); }
  const py::object& module() const { return module_; }

 private:
  // A named setting with the parser the compile configuration uses too.
  template <typename Parse>
  static auto compile_name(const char* key, const py::dict& settings, Parse parse)
      -> decltype(parse(std::string())) {
    try {
      return parse(settings[key].cast<std::string>());
    } catch (const ArgumentError& e) {
      throw ArgumentError(detail::concat("compile(): ", e.what()));
    }
  }
  static std::unique_ptr<train::Engine> make(const py::object& module,
                                             std::optional<comm::ProcessGroup> group) {
    const py::object nn_module = py::module_::import("torch.nn").attr("Module");
    if (!py::isinstance(module, nn_module)) {
      throw py::type_error(detail::concat(
          "tnt.Model: module must be a torch.nn.Module, got a ", type_name_of(module),
          ": wrap the network in a torch.nn.Module subclass (or pass the module itself, not its "
          "output or state_dict)"));
    }
    std::shared_ptr<ModuleAdapter> adapter = std::make_shared<PyModule>(module);
    // The engine's switches from the run's configuration, as tnt::Model does.
    return std::make_unique<train::Engine>(adapter, group ? *group : default_group(),
                                           train::EngineOptions::from_config(current_config()));
  }
  py::object module_;
  train::EngineHost host_;
};

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

}  // namespace

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

void bind_keras(py::module_& m) {
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

  py::class_<losses::Loss>(m, "Loss").def_readonly("name", &losses::Loss::name);
  m.def("loss_from_callable", &loss_from_callable, py::arg("fn"), py::arg("name"));
  m.def("loss_by_name", [](const std::string& name) {
    return by_name(name, losses::get, "compile(): ",
                   "; or a torch loss module, or a callable (y_pred, y_true) -> mean loss");
  });

  py::class_<metrics::Metric>(m, "Metric").def_readonly("name", &metrics::Metric::name);
  m.def("metric_from_callables", &metric_from_callables, py::arg("name"), py::arg("update"),
        py::arg("result"), py::arg("state_size"));
  m.def("metric_mean_of", &metric_mean_of, py::arg("name"), py::arg("fn"));
  m.def("metric_by_name", [](const std::string& name) {
    return by_name(name, metrics::get, "compile(): metrics: ",
                   "; or a tnt.metrics.Metric, or a callable (y_pred, y_true) -> per-sample "
                   "values");
  });
  m.def("option_defaults", &option_defaults, py::arg("name"));
}

}  // namespace

void bind_callbacks(py::module_& m);

void bind_model(py::module_& m) {
  bind_keras(m);
  m.def("default_shuffle_seed", &default_shuffle_seed);
  bind_callbacks(m);
  py::class_<PyModel>(m, "Model")
      .def(py::init<const py::object&, std::optional<comm::ProcessGroup>>(), py::arg("module"),
           py::arg("group") = py::none())
      .def("compile", &PyModel::compile)
      .def("fit", &PyModel::fit)
      .def("evaluate", &PyModel::evaluate)
      .def("predict", &PyModel::predict)
      .def_property(
          "stop_training", [](PyModel& s) { return s.host().stop_requested(); },
          [](PyModel& s, bool v) { s.host().set_stop_requested(v); })
      .def_property_readonly("epochs_done",
                             [](PyModel& s) { return s.engine().counters().epochs_done; })
      .def_property_readonly("loss_scale",
                             [](PyModel& s) {
                               const auto state = s.engine().loss_scale();
                               return state ? state->scale : 1.0;
                             })
      .def_property_readonly("skipped_steps",
                             [](PyModel& s) {
                               const auto state = s.engine().loss_scale();
                               return state ? state->skipped_steps : std::int64_t{0};
                             })
      .def_property_readonly("is_compiled",
                             [](PyModel& s) { return s.engine().compiled() != nullptr; })
      .def_property_readonly("group", [](PyModel& s) { return s.engine().group(); })
      .def_property_readonly("device", [](PyModel& s) { return s.engine().device().str(); })
      .def_property(
          "learning_rate", [](PyModel& s) { return s.engine().learning_rate(); },
          [](PyModel& s, double lr) { s.engine().set_learning_rate(lr); })
      .def("get_weights", [](PyModel& s) { return s.host().get_weights(); })
      .def("set_weights",
           [](PyModel& s, const std::vector<torch::Tensor>& w) {
             py::gil_scoped_release release;
             s.engine().set_weights(w);
           })
      .def("save_weights",
           [](PyModel& s, const std::string& path, bool all_ranks) {
             py::gil_scoped_release release;
             train::save_weights(s.engine(), path, all_ranks);
           })
      .def("load_weights",
           [](PyModel& s, const std::string& path) {
             py::gil_scoped_release release;
             train::load_weights(s.engine(), path);
           })
      .def("save",
           [](PyModel& s, const std::string& path, bool all_ranks) {
             py::gil_scoped_release release;
             train::save(s.engine(), path, all_ranks);
           })
      .def("load",
           [](PyModel& s, const std::string& path) {
             py::gil_scoped_release release;
             return train::load(s.engine(), path);
           })
      .def("summary", [](PyModel& s) {
        std::ostringstream out;
        s.host().summary(out);
        return out.str();
      });
}

}  // namespace tnt::python
