// The C++ built-in callbacks for Python (tnt.callbacks.*): the same objects
// the C++ front end uses, so their behaviour (global logs, master-only
// files, collective saves and backups) is the same from both. Python's
// own callbacks are tnt.callbacks.Callback subclasses, called through the
// trampoline in model_bindings.cpp. A Python schedule for
// LearningRateScheduler is called under the GIL.
#include <tarantella/base/error.h>
#include <tarantella/callbacks/builtins.h>
#include <tarantella/callbacks/remote_monitor.h>
#include <tarantella/callbacks/tensorboard.h>
#include <tarantella/train/progbar_logger.h>

#include "python/bindings.h"
#include "python/py_object.h"

namespace tnt::python {
namespace {

using callbacks::Callback;
using callbacks::Mode;

Mode mode_of(const std::string& mode) {
  if (mode == "min") return Mode::Min;
  if (mode == "max") return Mode::Max;
  TNT_CHECK(mode == "auto", "mode '", mode, "' is not known: use 'auto', 'min' or 'max'");
  return Mode::Auto;
}

template <typename T>
using CallbackClass = py::class_<T, Callback, std::shared_ptr<T>>;

}  // namespace

void bind_callbacks(py::module_& m) {
  py::class_<Callback, std::shared_ptr<Callback>>(m, "CppCallback")
      .def_readwrite("aggregate_logs", &Callback::aggregate_logs)
      .def_readwrite("run_on_all_ranks", &Callback::run_on_all_ranks);

  CallbackClass<callbacks::ModelCheckpoint>(m, "ModelCheckpoint")
      .def(py::init([](const std::string& filepath, const std::string& monitor,
                       const std::string& mode, bool save_best_only, bool save_weights_only,
                       std::int64_t save_freq_batches) {
             return std::make_shared<callbacks::ModelCheckpoint>(
                 callbacks::ModelCheckpointOptions(filepath)
                     .monitor(monitor)
                     .mode(mode_of(mode))
                     .save_best_only(save_best_only)
                     .save_weights_only(save_weights_only)
                     .save_freq_batches(save_freq_batches));
           }),
           py::arg("filepath"), py::arg("monitor") = "val_loss", py::arg("mode") = "auto",
           py::arg("save_best_only") = false, py::arg("save_weights_only") = false,
           py::arg("save_freq_batches") = 0);

  CallbackClass<callbacks::EarlyStopping>(m, "EarlyStopping")
      .def(py::init([](const std::string& monitor, double min_delta, int patience,
                       const std::string& mode, std::optional<double> baseline,
                       bool restore_best_weights) {
             return std::make_shared<callbacks::EarlyStopping>(
                 callbacks::EarlyStoppingOptions()
                     .monitor(monitor)
                     .min_delta(min_delta)
                     .patience(patience)
                     .mode(mode_of(mode))
                     .baseline(baseline)
                     .restore_best_weights(restore_best_weights));
           }),
           py::arg("monitor") = "val_loss", py::arg("min_delta") = 0.0, py::arg("patience") = 0,
           py::arg("mode") = "auto", py::arg("baseline") = py::none(),
           py::arg("restore_best_weights") = false);

  CallbackClass<callbacks::CSVLogger>(m, "CSVLogger")
      .def(py::init<std::string, char, bool>(), py::arg("filename"), py::arg("separator") = ',',
           py::arg("append") = false);

  CallbackClass<callbacks::TensorBoard>(m, "TensorBoard")
      .def(py::init([](const std::string& log_dir, py::object update_freq) {
             callbacks::TensorBoardOptions o(log_dir);
             if (py::isinstance<py::str>(update_freq)) {
               o.update_freq(update_freq.cast<std::string>());
             } else {
               o.update_freq(update_freq.cast<std::int64_t>());
             }
             return std::make_shared<callbacks::TensorBoard>(o);
           }),
           py::arg("log_dir") = "logs", py::arg("update_freq") = "epoch");

  CallbackClass<callbacks::LearningRateScheduler>(m, "LearningRateScheduler")
      .def(py::init([](py::object schedule, int verbose) {
             SharedPyObject held = share_object(std::move(schedule));
             return std::make_shared<callbacks::LearningRateScheduler>(
                 [held](std::int64_t epoch, double lr) {
                   py::gil_scoped_acquire gil;
                   return (*held)(epoch, lr).cast<double>();
                 },
                 verbose);
           }),
           py::arg("schedule"), py::arg("verbose") = 0);

  CallbackClass<callbacks::ReduceLROnPlateau>(m, "ReduceLROnPlateau")
      .def(py::init([](const std::string& monitor, double factor, int patience,
                       const std::string& mode, double min_delta, int cooldown, double min_lr) {
             return std::make_shared<callbacks::ReduceLROnPlateau>(
                 callbacks::ReduceLROnPlateauOptions()
                     .monitor(monitor)
                     .factor(factor)
                     .patience(patience)
                     .mode(mode_of(mode))
                     .min_delta(min_delta)
                     .cooldown(cooldown)
                     .min_lr(min_lr));
           }),
           py::arg("monitor") = "val_loss", py::arg("factor") = 0.1, py::arg("patience") = 10,
           py::arg("mode") = "auto", py::arg("min_delta") = 1e-4, py::arg("cooldown") = 0,
           py::arg("min_lr") = 0.0);

  CallbackClass<callbacks::BackupAndRestore>(m, "BackupAndRestore")
      .def(py::init<std::string, std::int64_t, bool>(), py::arg("backup_dir"),
           py::arg("save_freq") = 0, py::arg("delete_checkpoint") = true);

  CallbackClass<callbacks::TerminateOnNaN>(m, "TerminateOnNaN").def(py::init<>());

  CallbackClass<callbacks::ProgbarLogger>(m, "ProgbarLogger")
      .def(py::init<int>(), py::arg("verbose") = 1);

  CallbackClass<callbacks::RemoteMonitor>(m, "RemoteMonitor")
      .def(py::init([](const std::string& root, const std::string& path, const std::string& field,
                       const std::map<std::string, std::string>& headers, bool send_as_json) {
             callbacks::RemoteMonitorOptions o;
             o.root(root).path(path).field(field).headers(headers).send_as_json(send_as_json);
             return std::make_shared<callbacks::RemoteMonitor>(o);
           }),
           py::arg("root") = "http://localhost:9000", py::arg("path") = "/publish/epoch/end/",
           py::arg("field") = "data", py::arg("headers") = std::map<std::string, std::string>(),
           py::arg("send_as_json") = false);
}

}  // namespace tnt::python
