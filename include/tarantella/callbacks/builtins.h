// The built-in callbacks, each behaving like its Keras namesake. They see
// global logs (the serial run's values) unless configured otherwise, so the
// decisions they take — stop, change the learning rate, save — are the same
// on every rank. Those that write files or print run on the master rank
// only; those whose action is collective (ModelCheckpoint saves through a
// collective save; EarlyStopping may restore weights) run on every rank.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <torch/types.h>

#include <tarantella/base/arg.h>
#include <tarantella/train/callback.h>
#include <tarantella/train/progbar_logger.h>

namespace tnt::callbacks {

/// Whether a smaller or a larger monitored value is better; Auto picks Max
/// for names containing "acc", Min otherwise.
enum class Mode { Auto, Min, Max };

/// Quick hooks without a class.
/// Example: LambdaCallback().on_epoch_end([](auto e, auto& logs) { ... })
class LambdaCallback : public Callback {
 public:
  using EpochFn = std::function<void(std::int64_t, const Logs&)>;
  using TrainFn = std::function<void(const Logs&)>;
  LambdaCallback& on_epoch_begin(EpochFn f) { epoch_begin_ = std::move(f); return *this; }
  LambdaCallback& on_epoch_end(EpochFn f) { epoch_end_ = std::move(f); return *this; }
  LambdaCallback& on_batch_begin(EpochFn f) { batch_begin_ = std::move(f); return *this; }
  LambdaCallback& on_batch_end(EpochFn f) { batch_end_ = std::move(f); return *this; }
  LambdaCallback& on_train_begin(TrainFn f) { train_begin_ = std::move(f); return *this; }
  LambdaCallback& on_train_end(TrainFn f) { train_end_ = std::move(f); return *this; }

  void on_epoch_begin(std::int64_t e, const Logs& l) override { if (epoch_begin_) epoch_begin_(e, l); }
  void on_epoch_end(std::int64_t e, const Logs& l) override { if (epoch_end_) epoch_end_(e, l); }
  void on_train_batch_begin(std::int64_t b, const Logs& l) override { if (batch_begin_) batch_begin_(b, l); }
  void on_train_batch_end(std::int64_t b, const Logs& l) override { if (batch_end_) batch_end_(b, l); }
  bool wants_batch_logs(std::int64_t) const override { return static_cast<bool>(batch_end_); }
  void on_train_begin(const Logs& l) override { if (train_begin_) train_begin_(l); }
  void on_train_end(const Logs& l) override { if (train_end_) train_end_(l); }

 private:
  EpochFn epoch_begin_, epoch_end_, batch_begin_, batch_end_;
  TrainFn train_begin_, train_end_;
};

/// Options of CSVLogger (the file name is its constructor's argument).
struct CSVLoggerOptions {
  TNT_ARG(char, separator) = ',';
  /// Append to an existing file instead of overwriting it.
  TNT_ARG(bool, append) = false;
};

/// Streams epoch results to a CSV file: "epoch,<log names...>".
class CSVLogger : public Callback {
 public:
  bool wants_batch_logs(std::int64_t) const override { return false; }
  explicit CSVLogger(std::string filename, char separator = CSVLoggerOptions().separator(),
                     bool append = CSVLoggerOptions().append());
  CSVLogger(std::string filename, const CSVLoggerOptions& options)
      : CSVLogger(std::move(filename), options.separator(), options.append()) {}
  void on_train_begin(const Logs& logs) override;
  void on_epoch_end(std::int64_t epoch, const Logs& logs) override;

 private:
  std::string filename_;
  char separator_;
  bool append_;
  std::vector<std::string> keys_;
};

struct EarlyStoppingOptions {
  TNT_ARG(std::string, monitor) = "val_loss";
  TNT_ARG(double, min_delta) = 0.0;
  TNT_ARG(int, patience) = 0;
  TNT_ARG(Mode, mode) = Mode::Auto;
  TNT_ARG(std::optional<double>, baseline);
  TNT_ARG(bool, restore_best_weights) = false;
};

/// Stops training when the monitored value stops improving.
class EarlyStopping : public Callback {
 public:
  bool wants_batch_logs(std::int64_t) const override { return false; }
  explicit EarlyStopping(EarlyStoppingOptions options = EarlyStoppingOptions());
  void on_train_begin(const Logs& logs) override;
  void on_epoch_end(std::int64_t epoch, const Logs& logs) override;
  void on_train_end(const Logs& logs) override;
  /// The epoch training stopped at (0 if it did not stop early).
  std::int64_t stopped_epoch() const { return stopped_epoch_; }

 private:
  EarlyStoppingOptions o_;
  double best_ = 0.0;
  int wait_ = 0;
  std::int64_t stopped_epoch_ = 0;
  std::vector<torch::Tensor> best_weights_;
};

/// Options of LearningRateScheduler (the schedule is its constructor's argument).
struct LearningRateSchedulerOptions {
  /// 1: print each epoch's new rate (master rank).
  TNT_ARG(int, verbose) = 0;
};

/// Sets the learning rate at the start of each epoch: lr = schedule(epoch, lr).
class LearningRateScheduler : public Callback {
 public:
  bool wants_batch_logs(std::int64_t) const override { return false; }
  using Schedule = std::function<double(std::int64_t epoch, double lr)>;
  explicit LearningRateScheduler(Schedule schedule,
                                 int verbose = LearningRateSchedulerOptions().verbose());
  LearningRateScheduler(Schedule schedule, const LearningRateSchedulerOptions& options)
      : LearningRateScheduler(std::move(schedule), options.verbose()) {}
  const char* sets_learning_rate() const override { return "LearningRateScheduler"; }
  void on_epoch_begin(std::int64_t epoch, const Logs& logs) override;
  void on_epoch_end(std::int64_t epoch, const Logs& logs) override;

 private:
  Schedule schedule_;
  int verbose_;
};

struct ReduceLROnPlateauOptions {
  TNT_ARG(std::string, monitor) = "val_loss";
  TNT_ARG(double, factor) = 0.1;
  TNT_ARG(int, patience) = 10;
  TNT_ARG(Mode, mode) = Mode::Auto;
  TNT_ARG(double, min_delta) = 1e-4;
  TNT_ARG(int, cooldown) = 0;
  TNT_ARG(double, min_lr) = 0.0;
};

/// Multiplies the learning rate by `factor` after `patience` epochs without
/// improvement.
class ReduceLROnPlateau : public Callback {
 public:
  bool wants_batch_logs(std::int64_t) const override { return false; }
  explicit ReduceLROnPlateau(ReduceLROnPlateauOptions options = ReduceLROnPlateauOptions());
  const char* sets_learning_rate() const override { return "ReduceLROnPlateau"; }
  void on_train_begin(const Logs& logs) override;
  void on_epoch_end(std::int64_t epoch, const Logs& logs) override;

 private:
  ReduceLROnPlateauOptions o_;
  double best_ = 0.0;
  int wait_ = 0;
  int cooldown_left_ = 0;
};

struct ModelCheckpointOptions {
  /// File name template: {epoch} (1-based) and log values, with optional
  /// format specs, e.g. "ckpt/weights.{epoch:02d}-{val_loss:.2f}.pt".
  explicit ModelCheckpointOptions(std::string filepath) : filepath_(std::move(filepath)) {}
  const std::string& filepath() const { return filepath_; }
  TNT_ARG(std::string, monitor) = "val_loss";
  TNT_ARG(Mode, mode) = Mode::Auto;
  TNT_ARG(bool, save_best_only) = false;
  TNT_ARG(bool, save_weights_only) = false;
  /// Save every `n` batches instead of at each epoch end.
  TNT_ARG(std::int64_t, save_freq_batches) = 0;
  /// Write each file on a background thread while training goes on (the
  /// state is taken at the step boundary; at most one write in flight;
  /// fit() returns once the last is on disk). false: training waits for
  /// each write.
  TNT_ARG(bool, write_in_background) = true;

 private:
  std::string filepath_;
};

/// Saves the model (Model::save) or its weights during training. Saving is
/// collective and written by the master rank, to a temporary name renamed
/// into place: a crash never destroys the previous checkpoint. By default
/// the file is written in the background (write_in_background), as
/// BackupAndRestore's are.
class ModelCheckpoint : public Callback {
 public:
  /// Only at the batches where it saves (save_freq_batches).
  bool wants_batch_logs(std::int64_t) const override;
  explicit ModelCheckpoint(ModelCheckpointOptions options);
  void on_train_begin(const Logs& logs) override;
  void on_epoch_begin(std::int64_t epoch, const Logs& logs) override;
  void on_train_batch_end(std::int64_t batch, const Logs& logs) override;
  void on_epoch_end(std::int64_t epoch, const Logs& logs) override;
  void on_train_end(const Logs& logs) override;

 private:
  void save(std::int64_t epoch, const Logs& logs);
  void checked(const std::function<void()>& step) const;  // a failure named as this callback's
  ModelCheckpointOptions o_;
  double best_ = 0.0;
  std::int64_t epoch_ = 0;
  std::int64_t batches_ = 0;
};

/// Options of BackupAndRestore (the directory is its constructor's argument).
struct BackupAndRestoreOptions {
  /// Also back up after every `save_freq` optimizer steps; 0: at epoch ends only.
  TNT_ARG(std::int64_t, save_freq) = 0;
  /// Remove the backup when training completes.
  TNT_ARG(bool, delete_checkpoint) = true;
  /// Write each backup on a background thread while training goes on
  /// (false: the training waits for each write).
  TNT_ARG(bool, write_in_background) = true;
};

/// Keras's BackupAndRestore: keeps one backup of the whole training state
/// in `backup_dir` (written atomically: a crash mid-write leaves the previous
/// backup) at every epoch end and, with `save_freq` > 0, after every
/// `save_freq` optimizer steps. When fit() starts and a backup exists, it is
/// restored — weights, optimizer state, the epoch, the step within it, the
/// epoch's loss and metric sums, and the random state of every rank — and
/// training continues from there: the dataset passes over the batches
/// already done without reading them. With the same rank count the result is
/// bitwise that of an uninterrupted run; with another rank count (the global
/// batch size stays) it is equal up to float rounding. When training
/// completes, the backup is removed (unless `delete_checkpoint` is false).
/// Collective: runs on every rank; the master writes. By default
/// (write_in_background) the state is taken at the step boundary and a
/// thread writes the file while training goes on; at most one write is in
/// flight (the next backup waits for it), and fit() returns only once the
/// last one is on disk. write_in_background(false) writes before training
/// goes on.
///
/// Example (restarted by `tarantella --max-restarts 3` after a failure):
///   fit.callbacks({std::make_shared<tnt::callbacks::BackupAndRestore>("backup", 50)});
class BackupAndRestore : public Callback {
 public:
  bool wants_batch_logs(std::int64_t) const override { return false; }
  explicit BackupAndRestore(std::string backup_dir,
                            std::int64_t save_freq = BackupAndRestoreOptions().save_freq(),
                            bool delete_checkpoint = BackupAndRestoreOptions().delete_checkpoint());
  BackupAndRestore(std::string backup_dir, const BackupAndRestoreOptions& options)
      : BackupAndRestore(std::move(backup_dir), options.save_freq(), options.delete_checkpoint()) {
    write_in_background(options.write_in_background());
  }
  void on_train_begin(const Logs& logs) override;
  void on_train_batch_end(std::int64_t batch, const Logs& logs) override;
  void on_epoch_end(std::int64_t epoch, const Logs& logs) override;
  void on_train_end(const Logs& logs) override;
  /// The backup file: backup_dir/backup.pt.
  std::string backup_path() const;
  /// Writes each backup on a background thread (the default; false: the
  /// training waits for each write).
  BackupAndRestore& write_in_background(bool on) {
    background_ = on;
    return *this;
  }

 private:
  void backup();
  [[noreturn]] void fail(const std::string& what, const std::string& reason) const;
  std::string dir_;
  std::int64_t save_freq_;
  bool delete_checkpoint_;
  bool background_ = BackupAndRestoreOptions().write_in_background();
  /// A background write not yet known to be on disk ("epoch 2, after step 15").
  std::string in_flight_;
  std::int64_t batches_ = 0;
  /// Where the backup on disk stands ("epoch 2, after step 15"); empty: none.
  std::string on_disk_;
};

/// Stops training at the first batch whose loss is NaN or infinite.
class TerminateOnNaN : public Callback {
 public:
  void on_train_batch_end(std::int64_t batch, const Logs& logs) override;
};

/// Formats a checkpoint file name template (see ModelCheckpointOptions).
std::string format_filepath(const std::string& pattern, std::int64_t epoch, const Logs& logs);

// Each options struct's fields, each once: the one list the Python front
// end's keyword arguments go through (src/python/options.h). Add a new
// TNT_ARG here too.
template <typename Visit>
void fields(CSVLoggerOptions& o, Visit&& v) {
  v("separator", o.separator());
  v("append", o.append());
}
template <typename Visit>
void fields(EarlyStoppingOptions& o, Visit&& v) {
  v("monitor", o.monitor());
  v("min_delta", o.min_delta());
  v("patience", o.patience());
  v("mode", o.mode());
  v("baseline", o.baseline());
  v("restore_best_weights", o.restore_best_weights());
}
template <typename Visit>
void fields(LearningRateSchedulerOptions& o, Visit&& v) {
  v("verbose", o.verbose());
}
template <typename Visit>
void fields(ReduceLROnPlateauOptions& o, Visit&& v) {
  v("monitor", o.monitor());
  v("factor", o.factor());
  v("patience", o.patience());
  v("mode", o.mode());
  v("min_delta", o.min_delta());
  v("cooldown", o.cooldown());
  v("min_lr", o.min_lr());
}
/// The fields after the required filepath.
template <typename Visit>
void fields(ModelCheckpointOptions& o, Visit&& v) {
  v("monitor", o.monitor());
  v("mode", o.mode());
  v("save_best_only", o.save_best_only());
  v("save_weights_only", o.save_weights_only());
  v("save_freq_batches", o.save_freq_batches());
  v("write_in_background", o.write_in_background());
}
template <typename Visit>
void fields(BackupAndRestoreOptions& o, Visit&& v) {
  v("save_freq", o.save_freq());
  v("delete_checkpoint", o.delete_checkpoint());
  v("write_in_background", o.write_in_background());
}

}  // namespace tnt::callbacks
