// Private: the state behind tnt::Model, shared by model.cpp (construction,
// compile, weights), fit.cpp (training loop) and evaluate.cpp (evaluate,
// predict).
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <torch/torch.h>

#include <tarantella/data/element.h>
#include <tarantella/dp/gradient_sync.h>
#include <tarantella/base/config.h>
#include <tarantella/model/model.h>

#include "runtime/default_group.h"
#include "train/mixed_precision.h"

namespace tnt {
namespace dp {
class BucketSteps;
class OptimizerShards;
}

using Logs = callbacks::Logs;
class AutoTuner;
class Timeline;


/// Where fit() stands: the epoch in progress, the global batches of it done,
/// and their accumulated global loss/metric state (BackupAndRestore saves
/// it and continues from it).
struct TrainingPosition {
  std::int64_t epoch = 0;
  std::int64_t step = 0;
  std::vector<double> state;
  std::int64_t global_batch_size = 0;
  std::int64_t ranks = 0;  // of the run that saved it (restore_backup)
};

struct Model::Impl {
  Impl();
  ~Impl();
  /// The ranks this model trains on; every collective below uses it.
  comm::ProcessGroup group;
  /// The runtime's configuration (or the environment's without a runtime).
  Config config;
  std::shared_ptr<ModuleAdapter> net;
  torch::Device device{torch::kCPU};
  std::optional<CompileOptions> options;
  std::unique_ptr<torch::optim::Optimizer> optimizer;
  std::unique_ptr<dp::GradientSynchronizer> sync;
  /// CompileOptions().shard_optimizer: the optimizer in sharded form, made
  /// with `sync` (its buckets decide the shards). Declared after optimizer:
  /// destroyed first.
  std::unique_ptr<dp::OptimizerShards> shards;
  /// Without sharding: the optimizer stepped bucket by bucket as buckets
  /// arrive (TNT_OVERLAP_OPTIMIZER, element-wise optimizers), made with `sync`.
  std::unique_ptr<dp::BucketSteps> bucket_steps;
  std::vector<torch::Tensor> trainable;
  std::int64_t optimizer_steps = 0;  // the global step of schedules
  /// Dynamic loss scaling (mixed precision), made by compile() when on.
  std::shared_ptr<train::LossScaler> scaler;
  /// Deterministic mode: the model's seed for the chunks' random draws
  /// (drawn by the first deterministic fit) and the predicted fixed-point
  /// exponents; both in checkpoints, so a resumed run is bitwise the same.
  std::optional<std::uint64_t> deterministic_seed;
  std::vector<int> deterministic_exponents;
  std::int64_t epochs_done = 0;
  /// The fusion threshold chosen by auto-tuning (TNT_AUTOTUNE), if any.
  std::optional<std::size_t> threshold_override;
  /// Overlap on/off chosen by auto-tuning, if any (else TNT_OVERLAP).
  std::optional<bool> overlap_override;
  std::shared_ptr<AutoTuner> autotuner;  // while/after tuning (TNT_AUTOTUNE)
  std::unique_ptr<Timeline> timeline;    // TNT_TIMELINE: made by the first fit()
  /// fit()'s position, updated before train_batch_end and epoch_end.
  TrainingPosition position;
  /// Set by a callback's on_train_begin (BackupAndRestore): fit() continues
  /// from here instead of initial_epoch, skipping the batches already done.
  std::optional<TrainingPosition> resume;
  /// The network has layers whose training forward/backward communicate
  /// (tnt::nn::CollectiveModule, e.g. SyncBatchNorm).
  bool collective_layers = false;

  void require_compiled(const char* caller) const;
  /// Inputs and target of an element: (inputs..., target).
  std::vector<torch::Tensor> inputs_of(const data::Element& e) const;
  torch::Tensor target_of(const data::Element& e) const;
  /// Values per step in the loss/metric state: loss sum, samples, metrics...
  std::int64_t state_size() const;
  /// The state increment of one batch (float64).
  torch::Tensor state_of(const torch::Tensor& output, const torch::Tensor& target,
                         const torch::Tensor& mean_loss, std::int64_t samples) const;
  /// Loss and metric values of a (global) state, names prefixed.
  Logs logs_of(const std::vector<double>& state, const std::string& prefix = "") const;
  /// Structure check, then the master's weights, buffers and optimizer
  /// state on every rank. Collective.
  void synchronize_state();
  /// The gradient engine, built on first use.
  dp::GradientSynchronizer& synchronizer();
  /// With a sharded optimizer: puts it back in full form on every rank and
  /// drops the engine (the next synchronizer() shards it again). Collective.
  void unshard_optimizer();
  /// Drops the engine and what was made with it (shards must be undone
  /// first: unshard_optimizer()).
  void drop_engine();
  /// With auto-tuning: the engine rebuilt for the tuner's current setting
  /// (threshold, overlap) if that changed (call only between accumulation
  /// cycles).
  dp::GradientSynchronizer& retune();
  /// The network's output for a micro-batch of fit() or evaluate(). An
  /// empty training micro-batch (a rank without samples in a short last
  /// batch) runs the network only when it has collective layers, whose
  /// collectives every rank must join; otherwise the result is undefined
  /// and the training step contributes zeros without running anything.
  torch::Tensor forward(const std::vector<torch::Tensor>& inputs);
  /// The network's output, always (predict, Model::forward).
  torch::Tensor run(const std::vector<torch::Tensor>& inputs);
  /// Gives the model's group to collective layers not given one and sets
  /// collective_layers (at construction and compile: a converter may have
  /// added such layers in between).
  void bind_collective_layers();
};

/// The library's access to a Model's state.
struct ModelInternals {
  static Model::Impl& of(const Model& model) { return *model.impl_; }
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

/// Runs `action` on the group's master only; if it throws, every rank
/// throws the master's message. Collective. Used for file writes and reads.
void run_on_master_checked(const comm::ProcessGroup& group, const std::function<void()>& action);

/// Sums a float64 state vector over the group's ranks (blocking).
std::vector<double> allreduce_state(const comm::ProcessGroup& group,
                                    const std::vector<double>& local);

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
