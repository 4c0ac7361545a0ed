// What a callback may ask of the training in progress, whichever front end
// (the C++ tnt::Model or Python's tnt.Model) drives the engine: stop it,
// read and set the learning rate and the weights, save, the process group,
// where training stands, and backups to resume from. Callbacks see this
// interface instead of a concrete model, so the built-ins (callbacks/) sit
// below every facade and serve all of them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <torch/types.h>

#include <tarantella/comm/process_group.h>

namespace tnt::train {

/// Where fit() stands: the epoch in progress, the global batches of it done,
/// and their accumulated global loss/metric state (BackupAndRestore saves
/// it and continues from it).
struct TrainingPosition {
  std::int64_t epoch = 0;
  std::int64_t step = 0;
  std::vector<double> state;
  std::int64_t global_batch_size = 0;
  std::int64_t ranks = 0;  ///< of the run that saved it (restore_backup)
};

/// Implemented by each front end over its engine.
///
/// Example (inside a callback):
///   if (logs.at("loss") < 0.1) host()->request_stop();
///   host()->set_learning_rate(host()->learning_rate() / 2);
class TrainingHost {
 public:
  virtual ~TrainingHost() = default;
  /// Ends fit() at the end of the current step's epoch on every rank (the
  /// stop vote), or at the current step when every rank asks there.
  virtual void request_stop() = 0;
  virtual bool stop_requested() const = 0;
  /// The optimizer's learning rate (its first parameter group) / set in all.
  virtual double learning_rate() const = 0;
  virtual void set_learning_rate(double rate) = 0;
  /// Parameters then buffers; set_weights broadcasts the master's. Collective.
  virtual std::vector<torch::Tensor> get_weights() const = 0;
  /// The same, copied into host memory (no second copy on the GPU).
  virtual std::vector<torch::Tensor> get_weights_on_host() const {
    std::vector<torch::Tensor> weights = get_weights();
    for (auto& w : weights) w = w.to(torch::kCPU);
    return weights;
  }
  virtual void set_weights(const std::vector<torch::Tensor>& weights) = 0;
  /// The front end's whole-model file / weights file. Collective.
  virtual void save(const std::string& path) = 0;
  virtual void save_weights(const std::string& path) = 0;
  /// The ranks training runs on.
  virtual const comm::ProcessGroup& group() const = 0;
  /// Updated before every train_batch_end and epoch_end.
  virtual const TrainingPosition& position() const = 0;
  /// A backup of the whole training state at position(); restore returns
  /// the position it holds. Collective.
  virtual void save_backup(const std::string& path) = 0;
  virtual TrainingPosition restore_backup(const std::string& path) = 0;
  /// save_backup with the file written in the background: the state is
  /// taken now, at the step boundary, and training goes on while a thread
  /// writes it. A write still in flight is waited for first (at most one
  /// at a time), and its failure is an Error here. Collective. A host
  /// without a background writer writes at once.
  virtual void save_backup_in_background(const std::string& path) { save_backup(path); }
  /// Returns once every backup written in the background is on disk; a
  /// failed write is an Error on every rank. fit() calls it before it
  /// returns. Collective.
  virtual void wait_for_backups() {}
  /// save() (or save_weights() with `weights_only`) with the file written
  /// in the background, as save_backup_in_background does; a writer of its
  /// own, so that a failure is reported to the callback whose file it was.
  /// Collective.
  virtual void save_in_background(const std::string& path, bool weights_only) {
    if (weights_only) {
      save_weights(path);
    } else {
      save(path);
    }
  }
  /// wait_for_backups for the files of save_in_background.
  virtual void wait_for_checkpoints() {}
  /// From on_train_begin: fit() continues at `position` instead of its
  /// initial epoch, skipping the batches already done.
  virtual void resume_from(const TrainingPosition& position) = 0;
};

}  // namespace tnt::train
