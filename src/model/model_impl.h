// Private: the state behind tnt::Model, shared by model.cpp (construction,
// compile, weights, the loops' entry points), checkpoint.cpp and
// weights_io.cpp: a train::Engine, and the model as the host its callbacks
// see.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <torch/torch.h>

#include <tarantella/model/model.h>
#include <tarantella/train/training_host.h>

#include "io/master_checked.h"
#include "runtime/default_group.h"
#include "train/engine.h"

namespace tnt {

using Logs = callbacks::Logs;

using TrainingPosition = train::TrainingPosition;

/// The C++ facade's state: the engine, and the model as its callbacks'
/// host (stop, learning rate, weights, save, backups).
struct Model::Impl final : train::TrainingHost {
  Impl(Model& model, std::unique_ptr<train::Engine> e) : self(&model), engine(std::move(e)) {}
  /// The facade this state belongs to (updated when a Model is moved).
  Model* self;
  std::unique_ptr<train::Engine> engine;

  train::Driver driver() { return {this, self}; }

  void request_stop() override { self->stop_training = true; }
  bool stop_requested() const override { return self->stop_training; }
  double learning_rate() const override { return engine->learning_rate(); }
  void set_learning_rate(double rate) override { engine->set_learning_rate(rate); }
  std::vector<torch::Tensor> get_weights() const override { return self->get_weights(); }
  void set_weights(const std::vector<torch::Tensor>& w) override { self->set_weights(w); }
  void save(const std::string& path) override { self->save(path); }
  void save_weights(const std::string& path) override { self->save_weights(path); }
  const comm::ProcessGroup& group() const override { return engine->group(); }
  const TrainingPosition& position() const override { return engine->position(); }
  void save_backup(const std::string& path) override;
  TrainingPosition restore_backup(const std::string& path) override;
  void resume_from(const TrainingPosition& p) override { engine->resume_from(p); }
};

/// The library's access to a Model's engine.
struct ModelInternals {
  static train::Engine& of(const Model& model) { return *model.impl_->engine; }
};

/// What a file written by Model::save says about the model, beyond weights:
/// JSON texts / bytes, empty where absent. Read on the master, broadcast.
struct SavedModelDescription {
  std::string architecture;  // Model::to_json() of a layer-registry model
  std::string torchscript;   // a TorchScript module's bytes
  std::string compile;       // Model::get_compile_config(), if compiled
};
/// Collective over `group`; errors name the file, on every rank.
SavedModelDescription read_saved_model_description(const comm::ProcessGroup& group,
                                                   const std::string& path);
/// Restores weights, buffers and completed epochs from a Model::save file
/// (not the optimizer: for uncompiled models). Collective.
void load_checkpoint_weights(Model& model, const std::string& path);
/// Rebuilds CompileOptions from get_compile_config()'s JSON; user-defined
/// parts (null) are an Error naming the part and `path`.
CompileOptions compile_options_from_config(const std::string& compile_json,
                                           const std::string& path);


/// Writes a backup of `model` at `position` to `path` (atomically): a
/// Model::save file plus the position and every rank's random state.
/// Collective.
void save_backup(const Model& model, const std::string& path, const TrainingPosition& position);
/// Loads a save_backup file like Model::load and returns its position; with
/// the rank count of the backup, each rank gets its own random state back,
/// with another, the master's. Collective.
TrainingPosition restore_backup(Model& model, const std::string& path);

/// Copies the entries of a weight dict into the model's parameters and
/// buffers; missing, extra or mis-shaped entries are errors naming `path`.
void copy_weights(Model& model, const c10::impl::GenericDict& dict, const std::string& path);



}  // namespace tnt
