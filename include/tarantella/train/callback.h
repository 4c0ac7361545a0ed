// Keras-style callbacks: hooks the training loop calls at the start and end
// of training, testing, prediction, epochs and batches. The logs a callback
// sees are global values (aggregated over ranks exactly, by sample counts),
// the same numbers a serial run would produce; on_test_batch_end's alone
// are this rank's running values (a global value per evaluation batch would
// cost a collective per batch), and on_test_end's are global again.
#pragma once

#include <tarantella/base/arg.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace tnt {
class Model;
namespace train {
class TrainingHost;
}
}  // namespace tnt

namespace tnt::callbacks {

using Logs = std::map<std::string, double>;

/// What fit() tells callbacks before training starts.
struct Params {
  std::int64_t epochs = 0;
  std::int64_t steps = -1;  ///< steps per epoch; negative if unknown
  int verbose = 0;
  /// fit validates every this many epochs; 0 without validation_data.
  std::int64_t validation_freq = 0;
};

/// Base class: override the hooks you need.
///
/// Example:
///   struct PrintLoss : tnt::callbacks::Callback {
///     void on_epoch_end(std::int64_t epoch, const Logs& logs) override {
///       if (tnt::is_master_rank()) std::cout << epoch << ": " << logs.at("loss") << "\n";
///     }
///   };
class Callback {
 public:
  virtual ~Callback() = default;
  virtual void on_train_begin(const Logs&) {}
  virtual void on_train_end(const Logs&) {}
  virtual void on_epoch_begin(std::int64_t /*epoch*/, const Logs&) {}
  virtual void on_epoch_end(std::int64_t /*epoch*/, const Logs&) {}
  virtual void on_train_batch_begin(std::int64_t /*batch*/, const Logs&) {}
  virtual void on_train_batch_end(std::int64_t /*batch*/, const Logs&) {}
  virtual void on_test_begin(const Logs&) {}
  virtual void on_test_end(const Logs&) {}
  virtual void on_test_batch_begin(std::int64_t /*batch*/, const Logs&) {}
  /// This rank's running values of the evaluation so far (see the top).
  virtual void on_test_batch_end(std::int64_t /*batch*/, const Logs&) {}
  virtual void on_predict_begin(const Logs&) {}
  virtual void on_predict_end(const Logs&) {}
  virtual void on_predict_batch_begin(std::int64_t /*batch*/, const Logs&) {}
  virtual void on_predict_batch_end(std::int64_t /*batch*/, const Logs&) {}

  /// The training in progress (stop, learning rate, weights, save,
  /// backups), whichever front end drives it; set by fit/evaluate/predict.
  void set_host(train::TrainingHost* host) { host_ = host; }
  train::TrainingHost* host() const { return host_; }
  /// The C++ tnt::Model being trained, or null under another front end
  /// (Python's tnt.Model gives its callbacks the Python model instead).
  void set_model(Model* model) { model_ = model; }
  Model* model() const { return model_; }
  /// The callback's name if it sets the learning rate each epoch (the
  /// learning-rate callbacks), else null: fit() refuses such a callback
  /// next to a compile-time schedule, which would silently override it.
  virtual const char* sets_learning_rate() const { return nullptr; }
  /// Whether on_train_batch_end (and on_test_batch_end) reads its logs at
  /// `batch`. The loss and metrics of a step stay on the training device;
  /// reading them makes the host wait for the GPU (one synchronisation per
  /// step in which any callback asks, shared by all). true, the default:
  /// every batch, as in Keras. Override it to say false (the hooks then get
  /// empty logs) for a callback that does not read them, or reads them only
  /// at some batches. The built-ins answer for themselves.
  ///
  /// Example: bool wants_batch_logs(std::int64_t batch) const override {
  ///            return batch % 100 == 99; }
  virtual bool wants_batch_logs(std::int64_t /*batch*/) const { return true; }
  /// Epochs and steps of the fit() in progress.
  void set_params(const Params& params) { params_ = params; }
  const Params& params() const { return params_; }
  /// Whether this rank is the master of the model's group (rank 0 of its
  /// process set); set by fit/evaluate/predict.
  void set_master(bool master) { master_ = master; }
  bool master() const { return master_; }

  /// true (default): the logs are global values, aggregated over ranks
  /// exactly (the serial run's numbers); false: this rank's own values.
  bool aggregate_logs = true;
  /// true: the hooks run on every rank; false: only on the master rank.
  /// Built-ins that write files or print default to the master rank only.
  bool run_on_all_ranks = true;

 private:
  train::TrainingHost* host_ = nullptr;
  Model* model_ = nullptr;
  Params params_;
  bool master_ = true;
};

using CallbackPtr = std::shared_ptr<Callback>;

/// The manual's wrapper options for any callback.
///
/// Example:
///   auto cb = tnt::callbacks::wrap(std::make_shared<MyCallback>(),
///                                  tnt::callbacks::WrapOptions().aggregate_logs(false));
struct WrapOptions {
  TNT_ARG(bool, aggregate_logs) = true;
  TNT_ARG(bool, run_on_all_ranks) = true;
};

/// The fields of WrapOptions, each once (the Python Callback's defaults).
template <typename Visit>
void fields(WrapOptions& o, Visit&& v) {
  v("aggregate_logs", o.aggregate_logs());
  v("run_on_all_ranks", o.run_on_all_ranks());
}

/// Sets the options on `callback` and returns it.
inline CallbackPtr wrap(CallbackPtr callback, const WrapOptions& options) {
  callback->aggregate_logs = options.aggregate_logs();
  callback->run_on_all_ranks = options.run_on_all_ranks();
  return callback;
}

/// Records the epoch logs; fit() returns one.
///
/// Example: auto history = model.fit(ds, opts); history.history.at("loss").back();
class History : public Callback {
 public:
  bool wants_batch_logs(std::int64_t) const override { return false; }
  void on_train_begin(const Logs&) override;
  void on_epoch_end(std::int64_t epoch, const Logs& logs) override;

  std::vector<std::int64_t> epochs;
  std::map<std::string, std::vector<double>> history;
};

}  // namespace tnt::callbacks
