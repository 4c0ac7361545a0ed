// Private: what a training step works on, each part named for what it
// gives, handed to the step by the fit loop. With pipeline stages it is
// one stage's context: its part of the model, its replicas' gradient
// exchange, its links to the neighbour stages. The step sees nothing else
// of the engine: not its loops, its position, its persistence or its
// options.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <torch/types.h>

#include <tarantella/comm/process_group.h>

#include "stages/schedule.h"
#include "train/step/counters.h"
#include "train/step/gradient_exchange.h"
#include "train/step/step_model.h"

namespace torch::optim {
class Optimizer;
}

namespace tnt {
class Timeline;
}  // namespace tnt

namespace tnt::train {

class StageLink;

struct StepContext {
  /// The network as the step uses it: forward, target, loss, state increment.
  StepModel model;
  torch::optim::Optimizer& optimizer;
  /// The gradients' synchroniser, the optimizer's shards or per-bucket
  /// steps, the auto-tuner.
  GradientExchange& gradients;
  /// After the gradients are summed: clipping, the schedule, the loss scaler.
  StepRules rules;
  const comm::ProcessGroup& group;
  /// Where the step's phases are recorded, or null.
  Timeline* timeline;
  /// Optimizer steps (the schedule's clock); deterministic mode's seed and
  /// exponents.
  Counters& counters;
  /// The optimizer's parameters, and the network's buffers (deterministic
  /// mode resets and averages them).
  std::vector<torch::Tensor> trainable;
  std::vector<torch::Tensor> buffers;
  /// Their names in the whole model (state_dict keys; with stages, this
  /// stage's): deterministic mode keys its exponents by them.
  std::vector<std::string> trainable_names;
  std::vector<std::string> buffer_names;
  /// Values in the loss/metric state (train/step/metrics_accumulator.h).
  std::int64_t state_size;
  torch::Device device;
  /// Deterministic mode's chunk size in samples, or none.
  std::optional<std::int64_t> deterministic_chunk;
  /// With pipeline stages: this rank's links to its neighbour stages, the
  /// micro-batches per replica and global batch, and the schedule. Null,
  /// 1 and 1F1B without: one forward and one backward per step.
  std::shared_ptr<StageLink> stage;
  int micro_batches = 1;
  stages::Schedule schedule = stages::Schedule::one_f_one_b;
};

}  // namespace tnt::train
