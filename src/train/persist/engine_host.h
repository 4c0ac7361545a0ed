// Private: an engine with the host its callbacks see, as both front ends
// hold it (tnt::Model in model/, tnt.Model in python/): stop requests, the
// learning rate, weights, saves and backups, each through the engine and
// the persistence component (train/persist/persistence.h). One implementation of
// TrainingHost serves every front end, so a built-in callback behaves the
// same under either.
#pragma once

#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

#include "train/persist/checkpoint_writer.h"
#include "train/engine/engine.h"

namespace tnt::train {

class EngineHost : public TrainingHost {
 public:
  explicit EngineHost(std::unique_ptr<Engine> engine);
  ~EngineHost() override;

  Engine& engine() const { return *engine_; }
  /// The driver of a loop run by this front end (`model`: the C++ facade).
  Driver driver(Model* model = nullptr) { return {this, model}; }
  /// fit() clears it before it starts.
  virtual void set_stop_requested(bool stop) { stop_ = stop; }
  /// Parameter by parameter (name, shape, count), on the master only.
  void summary(std::ostream& out) const;

  void request_stop() override { set_stop_requested(true); }
  bool stop_requested() const override { return stop_; }
  double learning_rate() const override { return engine_->learning_rate(); }
  void set_learning_rate(double rate) override { engine_->set_learning_rate(rate); }
  std::vector<torch::Tensor> get_weights() const override;
  std::vector<torch::Tensor> get_weights_on_host() const override;
  void set_weights(const std::vector<torch::Tensor>& weights) override;
  void save(const std::string& path) override;
  void save_weights(const std::string& path) override;
  const comm::ProcessGroup& group() const override { return engine_->group(); }
  const TrainingPosition& position() const override { return engine_->position(); }
  void save_backup(const std::string& path) override;
  TrainingPosition restore_backup(const std::string& path) override;
  void resume_from(const TrainingPosition& position) override { engine_->resume_from(position); }
  void save_backup_in_background(const std::string& path) override;
  void wait_for_backups() override;
  void save_in_background(const std::string& path, bool weights_only) override;
  void wait_for_checkpoints() override;

 private:
  std::unique_ptr<Engine> engine_;
  /// The master's background writer, made by the first background backup;
  /// destroyed (waiting for its last write) before the engine.
  std::unique_ptr<CheckpointWriter> writer_;             ///< backups
  std::unique_ptr<CheckpointWriter> checkpoint_writer_;  ///< save_in_background
  bool stop_ = false;
};

}  // namespace tnt::train
