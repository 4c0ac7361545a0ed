// Private: one training step as a unit. On rank r, for its micro-batch of
// n_r samples of a global batch of B:
//   forward -> mean loss and loss/metric state (no loss when n_r = 0; see
//              StepModel::forward)
//   begin_step(weight n_r / (B * cycle), extras = state) -> hooks armed
//   backward -> buckets leave for the allreduce while backward runs
//   finish() -> summed gradients in .grad, the global state back
//   (when the accumulation cycle ends) clip, learning rate, optimizer step
// and the step's moments on the timeline and the overlap meter.
//
// train/ sits below the Model facade: what the step needs of the model
// (forward, loss, state) comes in as plain functions, so the epoch loop
// (model/fit.cpp: callbacks, validation, stop vote) and tests can drive it.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include <torch/types.h>

#include <tarantella/data/distribute.h>
#include <tarantella/dp/gradient_sync.h>

#include "train/mixed_precision.h"
#include "train/timeline.h"

namespace torch::optim {
class Optimizer;
}
namespace tnt::dp {
class BucketSteps;
class OptimizerShards;
}

namespace tnt::train {

/// What a step needs of the model.
struct StepModel {
  /// The network's output for a micro-batch's element (inputs on device).
  /// For an empty micro-batch it may return an undefined tensor: the step
  /// then skips forward and backward. A defined output is backpropagated
  /// (with zero gradients), for models whose layers communicate
  /// (SyncBatchNorm), which every rank must run.
  std::function<torch::Tensor(const data::Element&)> forward;
  /// The target of a micro-batch's element (on device).
  std::function<torch::Tensor(const data::Element&)> target;
  /// The mean loss of a batch.
  std::function<torch::Tensor(const torch::Tensor&, const torch::Tensor&)> loss;
  /// The float64 loss/metric state increment of a batch:
  /// (output, target, mean loss, samples).
  std::function<torch::Tensor(const torch::Tensor&, const torch::Tensor&, const torch::Tensor&,
                              std::int64_t)>
      state;
};

/// What happens after the gradients are summed (Keras's clipnorm/clipvalue,
/// a learning rate per optimizer step).
struct StepRules {
  std::optional<double> clip_norm;
  std::optional<double> clip_value;
  std::function<double(std::int64_t)> schedule;  ///< optimizer step -> rate, or empty
  /// Dynamic loss scaling (mixed precision), or null.
  std::shared_ptr<LossScaler> scaler;
};

using Clock = std::chrono::steady_clock;

/// The moments of one step, in order.
struct StepTimes {
  Clock::time_point data_begin, data_end, forward_begin, backward_begin, backward_end, sync_end,
      step_end;
};

/// One step's outcome.
struct StepResult {
  /// The global (summed over ranks) state of the cycle when it ended here;
  /// undefined in the middle of an accumulation cycle.
  torch::Tensor global_state;
  bool stepped = false;  ///< the optimizer stepped (end of an accumulation cycle)
  StepTimes times;
};

/// Runs steps of one model.
///
/// Example:
///   tnt::train::TrainStep step(model_fns, trainable, optimizer, rules);
///   auto r = step.run(*mb, sync, weight, reduce, pending, times_so_far);
class TrainStep {
 public:
  TrainStep(StepModel model, std::vector<torch::Tensor> trainable,
            torch::optim::Optimizer& optimizer, StepRules rules);

  /// One micro-step on `mb` with `weight` (n_r / (B * cycle)); this rank's
  /// state increment is added to `pending` (the cycle's state so far, which
  /// rides with the gradients; the caller clears it when the cycle ends).
  /// `optimizer_steps` counts optimizer steps (the schedule's clock) and is
  /// advanced when the optimizer steps (`reduce`: the cycle ends here).
  /// With `shards` (CompileOptions().shard_optimizer), `sync` reduce-scatters
  /// and the optimizer steps this rank's slices (dp::OptimizerShards).
  /// With `bucket_steps` (or `shards`) and no rule that needs every gradient
  /// first (clip_norm, clip_value, loss scaling), the optimizer steps each
  /// bucket as soon as it is reduced, while later buckets are on the wire.
  StepResult run(const data::MicroBatch& mb, dp::GradientSynchronizer& sync, double weight,
                 bool reduce, std::vector<double>& pending, std::int64_t& optimizer_steps,
                 Clock::time_point data_begin, Clock::time_point data_end,
                 dp::OptimizerShards* shards = nullptr, dp::BucketSteps* bucket_steps = nullptr);
  const StepModel& model() const { return model_; }
  const StepRules& rules() const { return rules_; }

 private:
  /// model_.forward, its LibTorch errors explained.
  torch::Tensor forward_checked(const data::MicroBatch& mb);

  StepModel model_;
  std::vector<torch::Tensor> trainable_;
  torch::optim::Optimizer& optimizer_;
  StepRules rules_;
};

/// The update after the global gradients are in .grad: with loss scaling,
/// unscale (or skip the step: false), then clip (by norm, by value), the
/// schedule's learning rate, the optimizer step; advances `optimizer_steps`.
/// With `shards`, the optimizer holds this rank's pieces (their gradients
/// set): the overflow check and the clipping norm are agreed over the ranks,
/// and the updated pieces are gathered into every rank's parameters.
bool apply_update(std::vector<torch::Tensor>& trainable, torch::optim::Optimizer& optimizer,
                  const StepRules& rules, std::int64_t& optimizer_steps,
                  dp::OptimizerShards* shards = nullptr);

/// The schedule's learning rate for optimizer step `optimizer_steps` in
/// every group (nothing without a schedule).
void set_learning_rate(torch::optim::Optimizer& optimizer, const StepRules& rules,
                       std::int64_t optimizer_steps);

/// Adds a step to the timeline (if any) and its allreduces to the overlap
/// meter: how much of each bucket's allreduce ran while backward did.
void record_step(Timeline* timeline, OverlapMeter& overlap, const dp::GradientSynchronizer& sync,
                 bool reduce, const StepTimes& t);

/// Adds a float64 state tensor into `into` (sizes must match).
void accumulate(std::vector<double>& into, const torch::Tensor& values);

}  // namespace tnt::train
