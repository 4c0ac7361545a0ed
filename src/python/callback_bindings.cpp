// The C++ built-in callbacks for Python (tnt.callbacks.*): the same objects
// the C++ front end uses, so their behaviour (global logs, master-only
// files, collective saves and backups) is the same from both. Python's
// own callbacks are tnt.callbacks.Callback subclasses, called through the
// trampoline in py_callback.cpp. A Python schedule for
// LearningRateScheduler is called under the GIL.
//
// A required argument (a file, a directory, a schedule) is positional; the
// options are the typed struct (EarlyStoppingOptions, ..., bound from its
// field list, options.h) or, Keras's way, keyword arguments named as its
// fields and read through the same list, so an option left out takes the
// struct's default and no default is restated here.
#include <tarantella/base/error.h>
#include <tarantella/callbacks/builtins.h>
#include <tarantella/callbacks/remote_monitor.h>
#include <tarantella/callbacks/tensorboard.h>
#include <tarantella/train/progbar_logger.h>

#include "python/bindings.h"
#include "python/options.h"
#include "python/py_object.h"

namespace tnt::python {
namespace {

using callbacks::Callback;

template <typename T>
using CallbackClass = py::class_<T, Callback, std::shared_ptr<T>>;

// A callback class whose constructor takes its options struct (bound as
// `options_name` from its field list) or the same options as keywords.
// The struct's overload comes first: pybind11 tries them in order, and
// the keyword one would take `options=` as an unknown keyword.
template <typename T, typename Options>
void bind_keyword_callback(py::module_& m, const char* name, const char* options_name) {
  bind_options_class<Options>(m, options_name);
  CallbackClass<T>(m, name)
      .def(py::init([](const Options& o) { return std::make_shared<T>(o); }), py::arg("options"))
      .def(py::init([name](const py::kwargs& kwargs) {
        return std::make_shared<T>(with_kwargs(std::string(name) + "()", Options(), kwargs));
      }));
  register_defaults_of(name, Options());
}

// A callback class whose constructor takes a required value (a file, a
// directory, a schedule) as `arg`, then its options struct or keywords,
// as bind_keyword_callback; make(value, options) makes it.
template <typename T, typename Options, typename Value, typename Make>
void bind_callback_of(py::module_& m, const char* name, const char* options_name,
                      const char* arg, Make make) {
  bind_options_class<Options>(m, options_name);
  CallbackClass<T>(m, name)
      .def(py::init([make](Value value, const Options& o) { return make(std::move(value), o); }),
           py::arg(arg), py::arg("options"))
      .def(py::init([make, name](Value value, const py::kwargs& kwargs) {
             return make(std::move(value),
                         with_kwargs(std::string(name) + "()", Options(), kwargs));
           }),
           py::arg(arg));
  register_defaults_of(name, Options());
}

// Keras's update_freq: "epoch", "batch" or a number of batches; None keeps
// the default.
void set_update_freq(callbacks::TensorBoardOptions& o, const py::object& freq) {
  if (freq.is_none()) return;
  if (py::isinstance<py::str>(freq)) {
    o.update_freq(freq.cast<std::string>());
    return;
  }
  std::int64_t batches = 0;
  from_python("TensorBoard()", "update_freq", freq, batches);
  o.update_freq(batches);
}

}  // namespace

void bind_callbacks(py::module_& m) {
  py::class_<Callback, std::shared_ptr<Callback>>(m, "CppCallback")
      .def_readwrite("aggregate_logs", &Callback::aggregate_logs)
      .def_readwrite("run_on_all_ranks", &Callback::run_on_all_ranks);
  register_defaults_of("Callback", callbacks::WrapOptions());

  CallbackClass<callbacks::ModelCheckpoint>(m, "ModelCheckpoint")
      .def(py::init([](const std::string& filepath, const py::kwargs& kwargs) {
             return std::make_shared<callbacks::ModelCheckpoint>(with_kwargs(
                 "ModelCheckpoint()", callbacks::ModelCheckpointOptions(filepath), kwargs));
           }),
           py::arg("filepath"));
  register_defaults_of("ModelCheckpoint", callbacks::ModelCheckpointOptions(""));

  bind_keyword_callback<callbacks::EarlyStopping, callbacks::EarlyStoppingOptions>(
      m, "EarlyStopping", "EarlyStoppingOptions");

  bind_callback_of<callbacks::CSVLogger, callbacks::CSVLoggerOptions, std::string>(
      m, "CSVLogger", "CSVLoggerOptions", "filename",
      [](std::string filename, const callbacks::CSVLoggerOptions& o) {
        return std::make_shared<callbacks::CSVLogger>(std::move(filename), o);
      });

  // log_dir may be positional (Keras's first parameter); None: the C++
  // default. update_freq is "epoch", "batch" or a number of batches.
  CallbackClass<callbacks::TensorBoard>(m, "TensorBoard")
      .def(py::init([](const std::optional<std::string>& log_dir, const py::object& update_freq,
                       const py::kwargs& kwargs) {
             callbacks::TensorBoardOptions o = log_dir ? callbacks::TensorBoardOptions(*log_dir)
                                                       : callbacks::TensorBoardOptions();
             set_update_freq(o, update_freq);
             return std::make_shared<callbacks::TensorBoard>(with_kwargs("TensorBoard()", o, kwargs));
           }),
           py::arg("log_dir") = py::none(), py::kw_only(), py::arg("update_freq") = py::none());
  register_defaults("TensorBoard", [] {
    const callbacks::TensorBoardOptions o;
    py::dict d = defaults_of(o);
    d["log_dir"] = o.log_dir();
    // Batches between writes; 0 is Keras's "epoch".
    d["update_freq"] =
        o.update_freq() == 0 ? py::object(py::str("epoch")) : py::object(py::int_(o.update_freq()));
    return d;
  });

  bind_callback_of<callbacks::LearningRateScheduler, callbacks::LearningRateSchedulerOptions,
                   py::object>(
      m, "LearningRateScheduler", "LearningRateSchedulerOptions", "schedule",
      [](py::object schedule, const callbacks::LearningRateSchedulerOptions& o) {
        SharedPyObject held = share_object(std::move(schedule));
        return std::make_shared<callbacks::LearningRateScheduler>(
            [held](std::int64_t epoch, double lr) {
              py::gil_scoped_acquire gil;
              return (*held)(epoch, lr).cast<double>();
            },
            o);
      });

  bind_keyword_callback<callbacks::ReduceLROnPlateau, callbacks::ReduceLROnPlateauOptions>(
      m, "ReduceLROnPlateau", "ReduceLROnPlateauOptions");

  bind_callback_of<callbacks::BackupAndRestore, callbacks::BackupAndRestoreOptions, std::string>(
      m, "BackupAndRestore", "BackupAndRestoreOptions", "backup_dir",
      [](std::string backup_dir, const callbacks::BackupAndRestoreOptions& o) {
        return std::make_shared<callbacks::BackupAndRestore>(std::move(backup_dir), o);
      });

  CallbackClass<callbacks::TerminateOnNaN>(m, "TerminateOnNaN").def(py::init<>());

  bind_keyword_callback<callbacks::ProgbarLogger, callbacks::ProgbarLoggerOptions>(
      m, "ProgbarLogger", "ProgbarLoggerOptions");
  bind_keyword_callback<callbacks::RemoteMonitor, callbacks::RemoteMonitorOptions>(
      m, "RemoteMonitor", "RemoteMonitorOptions");
}

}  // namespace tnt::python
