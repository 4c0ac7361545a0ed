// Private: calls a list of callbacks the way the manual specifies: each
// sees global logs or its rank's own (aggregate_logs), and runs on every
// rank or only the master (run_on_all_ranks). The logs are computed once per
// step by the training loop, not once per callback.
#pragma once

#include <functional>
#include <vector>

#include <tarantella/train/callback.h>
#include <tarantella/train/step_times.h>

#include "train/loop/driver.h"

namespace tnt::train {

using callbacks::Callback;
using callbacks::CallbackPtr;
using callbacks::Logs;
using callbacks::Params;

/// A step's logs, computed from device values on request: global (true) or
/// this rank's own (false).
using ReadLogs = std::function<const Logs&(bool global)>;

class CallbackList {
 public:
  /// `master`: whether this rank is the master of the model's group; the
  /// callbacks that run on the master only run here only then.
  CallbackList(std::vector<CallbackPtr> callbacks, Driver driver, const Params& params,
               bool master);

  void train_begin();
  void train_end(const Logs& global, const Logs& local);
  void epoch_begin(std::int64_t epoch);
  void epoch_end(std::int64_t epoch, const Logs& global, const Logs& local);
  void train_batch_begin(std::int64_t batch);
  /// The batch's logs, read only if a callback asks for them at this batch
  /// (Callback::wants_batch_logs): `read(true)` the global logs, `read(false)`
  /// this rank's own.
  void train_batch_end(std::int64_t batch, const ReadLogs& read);
  /// A straggler window's figures, to the callbacks that are StepTimesListeners.
  void step_times(const StepTimesWindow& window);
  void test_begin();
  void test_end(const Logs& global, const Logs& local);
  void test_batch_begin(std::int64_t batch);
  /// `read(false)`: this rank's running logs, read only if asked.
  void test_batch_end(std::int64_t batch, const ReadLogs& read);
  void predict_begin();
  void predict_end();
  void predict_batch_begin(std::int64_t batch);
  void predict_batch_end(std::int64_t batch);

 private:
  template <typename Fn>
  void each(Fn fn);

  std::vector<CallbackPtr> callbacks_;
  bool master_;
};

}  // namespace tnt::train
