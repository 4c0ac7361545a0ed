// Private: the training engine that every front end drives, as the front
// ends and the persistence component see it. It owns the state that
// training changes (the network's adapter, the compiled settings, the
// optimizer, the gradient engine and its shards, the counters that
// checkpoints keep, the auto-tuner and the timeline) and runs the loops:
// fit, evaluate and predict.
//
// A front end (model/ for C++, python/ for Python) adapts the user's
// network to a ModuleAdapter, fills CompileOptions/FitOptions, passes the
// engine switches explicitly (EngineOptions: nothing here reads the
// environment) and gives its callbacks a TrainingHost (EngineHost,
// train/persist/engine_host.h, serves both). It never runs a loop of its own. The
// engine is given its process group; every collective below uses it.
//
// This face is deliberately small (twenty methods). It owns the engine's
// state (train/engine/engine_state.h) and drives the loops over the contexts that
// the state hands out: the loops over a LoopContext
// (train/loop/loop_context.h), the steps over a StepContext
// (train/step/step_context.h); nothing above train/ includes those headers. Persistence (train/persist/persistence.h) goes through snapshot()
// and restore() below, never through the optimizer shards or the counters'
// storage, so that a snapshot taken at a step boundary can be written
// while training goes on.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <ATen/core/Dict.h>
#include <ATen/core/ivalue.h>
#include <torch/types.h>

#include <tarantella/comm/process_group.h>
#include <tarantella/keras/module_adapter.h>
#include <tarantella/train/callback.h>
#include <tarantella/train/engine_options.h>
#include <tarantella/train/options.h>
#include <tarantella/train/training_host.h>

#include "stages/groups.h"
#include "train/step/counters.h"
#include "train/loop/driver.h"

namespace torch::optim {
class Optimizer;
}

namespace tnt::train {

using Logs = callbacks::Logs;

/// The engine's state as a checkpoint keeps it, copied to host memory: it
/// no longer shares storage with the training tensors, so it can be
/// written while training changes them.
struct EngineSnapshot {
  NamedTensorList weights;  ///< parameters, then buffers, in host memory (pinned from a GPU)
  /// The optimizer state, if compiled, in one of two forms: torch::optim's
  /// bytes (full form), or, for the built-in optimizers, a copy of the
  /// optimizer with its own state tensors, serialized only when written
  /// (optimizer_bytes below), so that the training thread does not.
  std::optional<std::string> optimizer;
  std::shared_ptr<const torch::optim::Optimizer> optimizer_copy;
  /// The parameter names (named_parameters()) of the bytes' state, in the
  /// optimizer's order, one per line: torch::optim keys its state by
  /// position, and a user's optimizer may hold the parameters in any order.
  /// Empty where unknown (a sharded optimizer).
  std::string optimizer_names;
  /// With pipeline stages, the whole model's optimizer state by parameter
  /// name instead (train/engine/optimizer_by_name.h: the entry
  /// "optimizer_by_name"), and its optimizer's kind ("SGD", ...).
  std::optional<c10::impl::GenericDict> optimizer_by_name;
  std::string optimizer_kind;
  /// For a GPU model: waits until the device-to-host copies of the tensors
  /// above are done (they run on the device's stream, while the host goes
  /// on). Empty where there is nothing to wait for.
  std::function<void()> wait_for_copies;
  Counters counters;
  std::optional<LossScaleState> loss_scale;  ///< with dynamic loss scaling
  std::string architecture;  ///< the network's config JSON (layer-registry models) or empty
  std::string torchscript;   ///< a TorchScript module's bytes or empty
  std::string compile;       ///< the compile configuration's JSON, if compiled
};

/// What a snapshot is for: written before training goes on (it may share
/// the training tensors' memory: no copy is made), or later, beside
/// training (host copies of every tensor).
enum class SnapshotUse { write_now, write_later };

/// Host copies of a model's tensors for a snapshot. For a write later,
/// beside training: from a GPU into pinned memory, queued on the device's
/// current stream (after the kernels that wrote them, before training's
/// next ones) without the host waiting, else a copy in host memory. For a
/// write now: the tensors themselves where they are in host memory.
class HostCopies {
 public:
  HostCopies(SnapshotUse use, torch::Device device);
  torch::Tensor operator()(const torch::Tensor& t);
  /// Waits until the copies from the GPU are done, on any thread (the
  /// writer's: it makes the device its own first); empty when none was made.
  /// Call it after the last copy.
  std::function<void()> waiter() const;

 private:
  bool later_;
  torch::Device device_;
  bool from_gpu_ = false;
  bool pinning_failed_ = false;  ///< then copies the host waits for
};

/// The snapshot's optimizer state as torch::optim's bytes (serialized here
/// from optimizer_copy if that is the form), or none if not compiled. Call
/// wait_for_copies first. Any thread.
std::optional<std::string> optimizer_bytes(const EngineSnapshot& snapshot);

/// What a load hands to the engine, read and checked on the master alone.
struct RestoredState {
  /// {name: tensor} for every parameter and buffer; each is checked for
  /// presence and shape before any is copied.
  c10::impl::GenericDict weights{c10::StringType::get(), c10::AnyType::get()};
  /// torch::optim's bytes in full form, or none to keep the optimizer state.
  std::optional<std::string> optimizer;
  /// The names of `optimizer`'s parameters in its order (the entry
  /// "optimizer_names"), or none in files from before them.
  std::optional<std::vector<std::string>> optimizer_names;
  /// Or the state by parameter name (a pipelined model's checkpoint, see
  /// train/engine/optimizer_by_name.h) and the kind of its optimizer.
  std::optional<c10::impl::GenericDict> optimizer_by_name;
  std::string optimizer_kind;
  /// The file, for error messages.
  std::string source;
};

class EngineState;

class Engine {
 public:
  /// Moves `net` to the device (a GPU when LibTorch has one, unless
  /// options.use_gpu() is false). `group` must contain this rank. With
  /// pipeline `stages`, `net` is this rank's stage and `group` its stage's
  /// replicas (stages.stage).
  Engine(std::shared_ptr<ModuleAdapter> net, comm::ProcessGroup group, EngineOptions options,
         std::optional<stages::StageGroups> stages = std::nullopt);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  /// Checks `options`, makes the optimizer over the trainable parameters
  /// and resets the optimizer's counters (not the epochs done).
  void compile(CompileOptions options);
  /// The compiled settings, or null before compile().
  const CompileOptions* compiled() const;

  /// The loops (collective over group()).
  callbacks::History fit(const data::Dataset& train, const FitOptions& options, Driver driver);
  Logs evaluate(const data::Dataset& dataset, const EvaluateOptions& options, Driver driver);
  torch::Tensor predict(const data::Dataset& dataset, const PredictOptions& options, Driver driver);
  /// The network's output (predict, Model::forward); inputs on device().
  torch::Tensor run(const std::vector<torch::Tensor>& inputs);

  /// The model's group: every rank it trains on (with stages, every stage
  /// of every replica).
  const comm::ProcessGroup& group() const;
  /// With pipeline stages, where this rank sits; null without.
  const stages::StageLayout* stage_layout() const;
  /// The whole model's parameters, then buffers: this rank's without
  /// stages; with stages, every stage's (under the Sequential's names) on
  /// the model group's master and none elsewhere. Collective over the first
  /// replica's stages.
  NamedTensorList whole_model_weights();
  torch::Device device() const;
  ModuleAdapter& net() const;
  torch::optim::Optimizer& optimizer() const;
  /// Learning rate of the optimizer's first group / of every group.
  double learning_rate() const;
  void set_learning_rate(double rate);
  /// Copies of the parameters, then the buffers, made on `to` (the model's
  /// device for C++'s get_weights, the host for Python's): straight from
  /// the weights, never a second copy on the way.
  std::vector<torch::Tensor> get_weights(torch::Device to) const;
  /// Parameters, then buffers: checked against the model's shapes, copied,
  /// then the master's on every rank. Collective.
  void set_weights(const std::vector<torch::Tensor>& weights);
  /// fit()'s position (TrainingHost::position()).
  const TrainingPosition& position() const;
  /// Where the next fit() starts (TrainingHost::resume_from()).
  void resume_from(const TrainingPosition& position);
  const Counters& counters() const;
  /// Dynamic loss scaling's state, or none without it.
  std::optional<LossScaleState> loss_scale() const;

  /// Persistence. snapshot(): the state a checkpoint keeps, in host memory
  /// (with pipeline stages the whole model's: the first replica's stages
  /// send their weights and optimizer state to the master, collective over
  /// the model's group)
  /// (copied there for `write_later`, or from a GPU); collective (a sharded
  /// optimizer's state is gathered from every rank); the snapshot is made
  /// where `keep` is true, elsewhere the rank only takes part in the
  /// collectives and gets none.
  std::optional<EngineSnapshot> snapshot(bool keep, SnapshotUse use);
  /// Loads the state that `read_on_master` returns on the master into
  /// every rank. Collective. With pipeline stages, the first replica's rank
  /// of each stage reads (the file must be readable there) and keeps its
  /// stage's tensors, after every stage has checked its part; the other
  /// replicas get them from it. A sharded optimizer is put back in full form
  /// first (the next fit() shards again); on the master the optimizer state
  /// is loaded, then the weights (all checked before one is copied; if
  /// they do not fit, the previous optimizer state is put back), and errors
  /// there reach every rank; then the master's weights, buffers and
  /// optimizer state go to every rank.
  void restore(const std::function<RestoredState()>& read_on_master);
  /// Sets the counters and, where the engine scales the loss, its state
  /// (every rank, with the same values: after restore()).
  void restore_counters(const Counters& counters, const std::optional<LossScaleState>& loss_scale);

 private:
  /// snapshot() and restore() with pipeline stages (engine_stages.cpp).
  std::optional<EngineSnapshot> snapshot_with_stages(bool keep);
  void restore_with_stages(const std::function<RestoredState()>& read_on_master);

  std::unique_ptr<EngineState> state_;
};

}  // namespace tnt::train
