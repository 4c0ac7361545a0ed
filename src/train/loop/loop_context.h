// Private: what the loops (train/loop/fit_loop.h, train/loop/evaluate_loop.h) work
// on, handed to them by whoever owns the parts (the engine, a test). A
// loop sees these and nothing else of the engine: not its ownership,
// compile(), persistence or front ends. Each part is named for what it
// gives; a training step gets the narrower StepContext
// (train/step/step_context.h), made when the loop is ready for it.
#pragma once

#include <functional>
#include <optional>

#include <torch/types.h>

#include <tarantella/comm/process_group.h>
#include <tarantella/data/element.h>
#include <tarantella/keras/module_adapter.h>
#include <tarantella/train/engine_options.h>
#include <tarantella/train/options.h>

#include "train/step/counters.h"
#include "train/step/gradient_exchange.h"
#include "train/step/metrics_accumulator.h"
#include "train/loop/position_keeper.h"
#include "train/step/stage_link.h"
#include "train/step/step_context.h"
#include "train/step/step_model.h"

namespace tnt {
class Timeline;
}  // namespace tnt

namespace tnt::train {

/// fit's and evaluate's view of a compiled engine.
struct LoopContext {
  /// The engine's collectives: with pipeline stages, this stage's replicas.
  const comm::ProcessGroup& group;
  /// The model's group: every rank it trains on. Its master logs, and its
  /// ranks vote on stopping. Without stages, `group`.
  const comm::ProcessGroup& everyone;
  /// With stages: the links to the neighbour stages, and the micro-batches
  /// per replica and global batch. Null and 1 without.
  StageLink* stage;
  int micro_batches;
  torch::Device device;
  /// Training or inference mode, BatchNorm's batch-size check.
  ModuleAdapter& net;
  /// Whether the network has layers that join collectives (SyncBatchNorm):
  /// then every rank forwards every micro-batch, even an empty one.
  bool collective_layers;
  /// The engine's switches: the progress bar, auto-tuning, the straggler
  /// window.
  const EngineOptions& options;
  /// The compiled settings: accumulation, deterministic mode.
  const CompileOptions& compiled;
  /// The model as a step sees it: forward, target, loss, state increment.
  StepModel model;
  /// The loss and metrics' state vector and its logs.
  const MetricsAccumulator& metrics;
  /// Where the phases are recorded, or null.
  Timeline* timeline;
  /// Epochs done (and what a step advances).
  Counters& counters;
  /// Where fit() is, and where it resumes.
  PositionKeeper& position;
  /// The auto-tuner's start.
  GradientExchange& gradients;
  /// The initial broadcast: structure check, the master's weights, buffers
  /// and optimizer state on every rank. Collective.
  std::function<void()> synchronize_state;
  /// What a training step works on; made after the callbacks' train_begin
  /// (a restored backup brings deterministic mode's seed and exponents).
  std::function<StepContext()> step_context;
};

/// predict's view of an engine, compiled or not: the outputs of the
/// network for a micro-batch's inputs.
struct PredictContext {
  /// As in LoopContext.
  const comm::ProcessGroup& group;
  const comm::ProcessGroup& everyone;
  torch::Device device;
  ModuleAdapter& net;
  std::function<torch::Tensor(const data::Element&)> output;
  StageLink* stage = nullptr;
  int micro_batches = 1;
  /// Deterministic mode's chunk size (when compiled with it): each chunk
  /// is forwarded on its own, so the outputs do not depend on the ranks or
  /// the stages either.
  std::optional<std::int64_t> chunk;
};

}  // namespace tnt::train
