// The TensorBoard callback: scalar logs of training as TensorBoard event
// files, like Keras's tf.keras.callbacks.TensorBoard. Epoch values go to
// <log_dir>/train (tags "epoch_<name>") and validation values ("val_<name>"
// in the logs) to <log_dir>/validation (tag "epoch_<name>"); with an
// update frequency in batches, "batch_<name>" values go to train/ as well.
// Only the master rank writes, with the global values, unless
// TNT_TENSORBOARD_ON_ALL_DEVICES=true: then every rank writes its own values
// into <log_dir>/rank_<R>/. With the straggler report on
// (TNT_STRAGGLER_WINDOW), every window's per-rank breakdown goes to train/ as
// "straggler/<part>_ms/rank_<R>" for the parts data, compute, other (callbacks
// and the rest outside collectives) and wait (in collectives). Files are
// written on a background thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include <tarantella/base/arg.h>
#include <tarantella/train/callback.h>
#include <tarantella/train/step_times.h>

namespace tnt::callbacks {

/// Options of TensorBoard; the log directory defaults to Keras's "logs".
///
/// Example:
///   tnt::callbacks::TensorBoardOptions("logs/run1").update_freq(10)
struct TensorBoardOptions {
  explicit TensorBoardOptions(std::string log_dir = "logs") : log_dir_(std::move(log_dir)) {}
  const std::string& log_dir() const { return log_dir_; }

  /// "epoch" (default): scalars at the end of every epoch only; "batch":
  /// also after every training batch. Anything else throws tnt::Error.
  TensorBoardOptions& update_freq(const std::string& v);
  /// Also after every `every_n_batches` training batches (at least 1).
  TensorBoardOptions& update_freq(std::int64_t every_n_batches);
  /// Batches between batch-level writes; 0: per epoch only.
  std::int64_t update_freq() const { return update_freq_; }
  /// Also write "epoch_steps_per_second" to train/ (Keras's option).
  TNT_ARG(bool, write_steps_per_second) = false;
  /// Appended to every event file name.
  TNT_ARG(std::string, filename_suffix);

 private:
  std::string log_dir_;
  std::int64_t update_freq_ = 0;
};

/// The TNT_ARG fields of TensorBoardOptions, each once (see fields() in
/// builtins.h); log_dir and update_freq have constructors and setters of
/// their own.
template <typename Visit>
void fields(TensorBoardOptions& o, Visit&& v) {
  v("write_steps_per_second", o.write_steps_per_second());
  v("filename_suffix", o.filename_suffix());
}

/// Writes the training logs as TensorBoard scalars.
///
/// Steps: epoch values are written at step = epoch (0-based, as Keras);
/// batch values at step = number of training batches finished since
/// training began (1, 2, ...), counted across epochs.
///
/// Example:
///   auto tb = std::make_shared<tnt::callbacks::TensorBoard>(
///       tnt::callbacks::TensorBoardOptions("logs/lenet5").update_freq("batch"));
///   model.fit(train, tnt::FitOptions().epochs(5).validation_data(val).callbacks({tb}));
///   // tensorboard --logdir logs/lenet5
class TensorBoard : public Callback, public train::StepTimesListener {
 public:
  /// Only at the batches it writes (update_freq).
  bool wants_batch_logs(std::int64_t) const override;
  /// Reads TNT_TENSORBOARD_ON_ALL_DEVICES: false (default) runs on the master
  /// rank with global logs; true runs on every rank with its own logs
  /// (run_on_all_ranks = true, aggregate_logs = false).
  explicit TensorBoard(TensorBoardOptions options);
  ~TensorBoard() override;

  void on_train_begin(const Logs& logs) override;
  void on_epoch_begin(std::int64_t epoch, const Logs& logs) override;
  void on_train_batch_end(std::int64_t batch, const Logs& logs) override;
  void on_epoch_end(std::int64_t epoch, const Logs& logs) override;
  void on_train_end(const Logs& logs) override;
  /// Every rank's mean data, compute, other and wait per step of a
  /// straggler window, at step = training batches finished.
  void on_step_times(const train::StepTimesWindow& window) override;

  const TensorBoardOptions& options() const { return options_; }
  /// The folder this rank writes into: log_dir, or log_dir/rank_<R> when
  /// every rank writes; empty on a rank that writes nothing.
  std::string rank_log_dir() const;

 private:
  struct Writers;
  bool writes_on_this_rank() const;

  TensorBoardOptions options_;
  std::unique_ptr<Writers> writers_;  // open between train begin and end
  std::int64_t batches_seen_ = 0;
  std::int64_t epoch_first_batch_ = 0;
  double epoch_start_seconds_ = 0;
};

}  // namespace tnt::callbacks
