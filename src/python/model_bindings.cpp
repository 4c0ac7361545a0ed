// The Model facade for Python: tnt.Model over a torch.nn.Module drives the
// same training engine as the C++ tnt::Model (train/engine/engine.h: the epoch
// loop, validation, the stop vote, callbacks, checkpoints, resume). What is
// Python's is adapted at the edges, each in a file of its own:
//  * the network: py_module.h;
//  * the loss and metrics: loss_metric_bindings.cpp;
//  * callbacks: py_callback.h, a trampoline for Python's; the built-ins are
//    the C++ ones (callback_bindings.cpp);
//  * data: dataset_from_data (py_dataset.h): the data arrive as the user
//    gave them, with the global batch size, and become a Dataset here;
//  * optimizers, losses and metrics by name: registry_bindings.cpp.
// This file holds PyModel, which puts them together, and its binding. The
// loops run with the GIL released; Python is entered only from the thread
// that called fit/evaluate/predict, which holds it again there. PyModel
// holds the engine with its callbacks' host (train/persist/engine_host.h), as
// tnt::Model does; persistence is the component both use
// (train/persist/persistence.h), so a checkpoint written from Python loads in C++
// and the reverse.
#include <map>
#include <optional>
#include <sstream>
#include <string>

#include <tarantella/base/default_seed.h>
#include <tarantella/base/error.h>
#include <tarantella/runtime/runtime.h>

#include "python/bindings.h"
#include "python/options.h"
#include "python/py_callback.h"
#include "python/py_dataset.h"
#include "python/py_module.h"
#include "python/py_object.h"
#include "runtime/default_group.h"
#include "stages/groups.h"
#include "train/persist/engine_host.h"
#include "train/persist/persistence.h"

namespace tnt::python {
namespace {

py::dict to_dict(const std::map<std::string, double>& logs) {
  py::dict d;
  for (const auto& [name, value] : logs) d[py::str(name)] = value;
  return d;
}

// tnt.Model's compiled part; the Python class (python/tarantella/model.py)
// turns Keras's arguments into the options structs (bound from their field
// lists, options.h) and the objects beside them.
class PyModel {
 public:
  PyModel(const py::object& module, std::optional<comm::ProcessGroup> group,
          int pipeline_stages, std::optional<int> micro_batches, const std::string& schedule)
      : module_(module),
        trained_(module),
        host_(make(module, std::move(group), pipeline_stages, micro_batches, schedule,
                   trained_)) {}

  void compile(const optimizers::Factory& optimizer, const losses::Loss& loss,
               const std::vector<metrics::Metric>& metric_list, CompileOptions options) {
    options.optimizer(optimizer).loss(loss).metrics(metric_list);
    engine().compile(std::move(options));
  }

  py::dict fit(const py::tuple& train_data, FitOptions options, const py::list& cbs,
               const std::optional<py::tuple>& validation_data) {
    const data::Dataset train = dataset_from_data(train_data);
    options.callbacks(to_callbacks(cbs));
    if (validation_data) options.validation_data(dataset_from_data(*validation_data));
    callbacks::History history;
    {
      py::gil_scoped_release release;
      host_.set_stop_requested(false);
      history = engine().fit(train, options, host_.driver());
    }
    py::dict h;
    for (const auto& [name, values] : history.history) h[py::str(name)] = values;
    return h;
  }

  py::dict evaluate(const py::tuple& given, EvaluateOptions options, const py::list& cbs) {
    const data::Dataset dataset = dataset_from_data(given);
    options.callbacks(to_callbacks(cbs));
    std::map<std::string, double> logs;
    {
      py::gil_scoped_release release;
      logs = engine().evaluate(dataset, options, host_.driver());
    }
    return to_dict(logs);
  }

  py::object predict(const py::tuple& given, PredictOptions options, const py::list& cbs) {
    const data::Dataset dataset = dataset_from_data(given);
    options.callbacks(to_callbacks(cbs));
    torch::Tensor out;
    {
      py::gil_scoped_release release;
      out = engine().predict(dataset, options, host_.driver());
    }
    if (!out.defined()) return py::none();
    return py::cast(out);
  }

  train::EngineHost& host() { return host_; }
  train::Engine& engine() { return host_.engine(); }
  const py::object& module() const { return module_; }
  const py::object& trained() const { return trained_; }

 private:
  static std::unique_ptr<train::Engine> make(const py::object& module,
                                             std::optional<comm::ProcessGroup> group,
                                             int pipeline_stages, std::optional<int> micro_batches,
                                             const std::string& schedule, py::object& trained) {
    const py::object nn_module = py::module_::import("torch.nn").attr("Module");
    if (!py::isinstance(module, nn_module)) {
      throw py::type_error(detail::concat(
          "tnt.Model: module must be a torch.nn.Module, got a ", type_name_of(module),
          ": wrap the network in a torch.nn.Module subclass (or pass the module itself, not its "
          "output or state_dict)"));
    }
    // The engine's switches from the run's configuration, as tnt::Model does.
    const auto options = train::EngineOptions::from_config(current_config());
    comm::ProcessGroup g = group ? *group : default_group();
    if (pipeline_stages == 1) {  // SplitPoints are identities
      return std::make_unique<train::Engine>(module_adapter(module), std::move(g), options);
    }
    stages::PipelineSettings settings;
    settings.stages = pipeline_stages;
    settings.micro_batches = micro_batches.value_or(stages::default_micro_batches(pipeline_stages));
    settings.schedule = stages::schedule_from_name(schedule);
    stages::StageGroups groups = stages::split_into_stages(g, settings);
    trained = stage_of(module, groups.layout, g.is_master());
    comm::ProcessGroup stage_group = groups.stage;
    return std::make_unique<train::Engine>(module_adapter(trained), std::move(stage_group),
                                           options, std::move(groups));
  }
  py::object module_;
  py::object trained_;  // what this rank trains: the module, or its stage
  train::EngineHost host_;
};

}  // namespace

void bind_model(py::module_& m) {
  m.def("default_shuffle_seed", &default_shuffle_seed);
  bind_options_class<CompileOptions>(m, "CompileOptions");
  bind_options_class<FitOptions>(m, "FitOptions");
  bind_options_class<EvaluateOptions>(m, "EvaluateOptions");
  bind_options_class<PredictOptions>(m, "PredictOptions");
  py::class_<PyModel>(m, "Model")
      .def(py::init<const py::object&, std::optional<comm::ProcessGroup>, int,
                    std::optional<int>, const std::string&>(),
           py::arg("module"), py::arg("group") = py::none(), py::arg("pipeline_stages") = 1,
           py::arg("micro_batches") = py::none(), py::arg("schedule") = "1f1b")
      .def_property_readonly("trained_module", &PyModel::trained)
      .def_property_readonly("pipeline",
                             [](PyModel& s) -> py::object {
                               const stages::StageLayout* l = s.engine().stage_layout();
                               if (l == nullptr) return py::none();
                               return py::make_tuple(l->stage, l->stages, l->replica, l->replicas);
                             })
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
      .def("forward",
           [](PyModel& s, const std::vector<torch::Tensor>& inputs) {
             // As tnt::Model::forward: the inputs on the model's device,
             // the compiled mixed precision (the GIL stays held: the
             // module's forward is Python).
             std::vector<torch::Tensor> on_device;
             for (const auto& t : inputs) on_device.push_back(t.to(s.engine().device()));
             return s.engine().run(on_device);
           })
      .def("get_weights",
           [](PyModel& s) {
             // Host copies (Keras's weights are host arrays).
             return s.engine().get_weights(torch::kCPU);
           })
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
