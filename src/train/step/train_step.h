// Private: one training step as a unit, and the strategy that runs it,
// chosen once per fit (make_step):
//   TrainStep          (the default) on rank r, for its micro-batch of n_r
//                      samples of a global batch of B:
//     forward -> mean loss and loss/metric state (no loss when n_r = 0; see
//                StepModel::forward)
//     begin_step(weight n_r / (B * cycle), extras = state) -> hooks armed
//     backward -> buckets leave for the allreduce while backward runs
//     finish() -> summed gradients in .grad, the global state back
//     (when the accumulation cycle ends) the update: clip, learning rate,
//     optimizer step, either after the last bucket or bucket by bucket as
//     each is reduced (Update, decided once from the compiled options)
//   DeterministicStep  (CompileOptions().deterministic; deterministic_step.h)
// A step owns its accumulation cycle's state (this rank's loss/metric state
// so far; the deterministic step also the cycle's gradients) and hands it
// out when the cycle ends. It asks the engine for the gradient engine every
// step: a callback's load() may drop it, and the auto-tuner replaces it
// between cycles.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include <torch/types.h>

#include <tarantella/data/distribute.h>
#include <tarantella/dp/gradient_sync.h>

#include "train/observe/device_clock.h"
#include "train/step/stage_forward.h"
#include "train/step/step_context.h"
#include "train/step/step_model.h"
#include "train/observe/timeline.h"

namespace torch::optim {
class Optimizer;
}
namespace tnt::dp {
class OptimizerShards;
}

namespace tnt::train {


/// Where step `step` of an epoch of `steps_total` steps (< 0: unknown) lies
/// in accumulation cycles of k micro-steps: the length of its cycle (the
/// last one of an epoch may be shorter; its gradients are averaged over
/// its real length) and whether the cycle ends (reduces) there.
struct CyclePoint {
  std::int64_t start = 0;
  std::int64_t length = 1;
  bool reduce = true;
};
CyclePoint cycle_at(std::int64_t step, int k, std::int64_t steps_total);

/// One micro-step as the loop sees it.
struct StepInput {
  const data::MicroBatch& mb;
  /// The epoch's data order (Counters::data_epochs), which keys
  /// deterministic mode's per-batch seeds.
  std::int64_t epoch = 0;
  std::int64_t step = 0;
  CyclePoint cycle;
  /// Samples in the global batch (the ranks' micro-batches summed).
  std::int64_t global_size = 0;
  Clock::time_point data_begin, data_end;
};

/// The moments of one step, in order, and how long the training thread was
/// blocked in collectives between forward_begin and step_end (waiting for
/// the gradients' allreduce, a sharded step's gather, deterministic mode's
/// exact sum): the step's compute is the rest (compute()), one part of the
/// straggler report's breakdown (train/observe/straggler_monitor.h). compute() is
/// the one place that figure comes from. On the CPU it is host-clock time.
/// On a GPU, where the step does not synchronise and host clocks see only
/// the launches, it is the device's own time from CUDA events
/// (`device_compute`, train/observe/device_clock.h), read once they completed: the
/// latest completed step's, a step or two behind.
struct StepTimes {
  Clock::time_point data_begin, data_end, forward_begin, backward_begin, backward_end, sync_end,
      step_end;
  Clock::duration waited{};
  std::optional<Clock::duration> device_compute;
  Clock::duration compute() const {
    return device_compute ? *device_compute : step_end - forward_begin - waited;
  }
};

/// One step's outcome.
struct StepResult {
  /// When the cycle ended here: its loss/metric state summed over the
  /// ranks, and this rank's own, as float64 tensors on the training device
  /// (reading them is a host synchronisation: train/observe/host_reads.h); undefined
  /// in the middle of an accumulation cycle.
  torch::Tensor global_state;
  torch::Tensor local_state;
  bool stepped = false;  ///< the optimizer stepped (end of an accumulation cycle)
  StepTimes times;
};

/// A training step strategy.
class Step {
 public:
  /// `state_size`: values of the loss/metric state, kept on `device` (the
  /// training device: the step never reads it on the host).
  Step(std::size_t state_size, torch::Device device);
  virtual ~Step() = default;
  Step(const Step&) = delete;
  Step& operator=(const Step&) = delete;

  /// One micro-step (collective over the engine's group).
  virtual StepResult run(const StepInput& in) = 0;
  /// How much of the allreduce time since the last call was hidden behind
  /// backward (nothing for a step without overlap); the meter restarts.
  OverlapMeter take_overlap();

 protected:
  /// Adds this rank's state increment (any float tensor of state_size()
  /// values) to the cycle's, on the device.
  void add_pending(const torch::Tensor& increment);
  /// The cycle's state of this rank, cleared for the next cycle.
  torch::Tensor take_pending();
  const torch::Tensor& pending() const { return pending_; }
  std::size_t state_size() const { return static_cast<std::size_t>(pending_.numel()); }

  OverlapMeter overlap_;

 private:
  torch::Tensor pending_;  // float64: this rank, this accumulation cycle
};

/// The strategy for the context's settings (collective: deterministic
/// mode agrees on a seed).
std::unique_ptr<Step> make_step(StepContext context);

/// How the default step updates the weights when a cycle ends.
enum class Update {
  kAfterSync,  ///< after every bucket is reduced (clipping and loss scaling need that)
  kPerBucket,  ///< each bucket as soon as it is reduced (sharded or element-wise optimizer)
};

class TrainStep final : public Step {
 public:
  explicit TrainStep(StepContext context);
  StepResult run(const StepInput& in) override;
  Update update() const { return update_; }

 private:
  /// A micro-batch between its forward and its backward.
  struct InFlight {
    StageForward stage;
    torch::Tensor loss;  ///< on the last stage, with samples
  };
  /// The stage's schedule of forwards and backwards (one of each without
  /// stages), the gradient engine armed before each backward; the times
  /// recorded.
  void forward_backward(const StepInput& in, dp::GradientSynchronizer& sync, StepTimes& t);
  InFlight forward_part(const data::MicroBatch& part, int micro);
  /// backward_on_stage's times.
  StageBackward backward_part(const StepInput& in, const data::MicroBatch& part, InFlight& f,
                              int micro, bool reduce, dp::GradientSynchronizer& sync);
  void update_after_sync(dp::GradientSynchronizer& sync, bool reduce, StepResult& r);
  void update_per_bucket(dp::GradientSynchronizer& sync, StepResult& r);
  /// The stage's forward, its LibTorch errors explained.
  StageForward forward_checked(const data::MicroBatch& mb, int micro);

  StepContext c_;
  Update update_;
  DeviceStepClock device_clock_;
  /// With stages and a timeline: this step's micro-batch forwards and
  /// backwards, then the link's transfers.
  std::vector<StageLink::Event> slices_;
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
/// meter: how much of each bucket's allreduce ran while backward did. With
/// `stage` (pipeline stages), its micro-batch slices and transfers replace
/// the step's one forward and one backward slice: sends on the stage link
/// track, the rest on the compute track.
void record_step(Timeline* timeline, OverlapMeter& overlap, const dp::GradientSynchronizer& sync,
                 bool reduce, const StepTimes& t,
                 const std::vector<StageLink::Event>* stage = nullptr);

/// With pipeline stages, the loss and metrics are the last stage's: its
/// global and local state, in `r`, on every stage of `link`'s pipeline.
/// Collective over the pipeline.
void share_last_stage_state(const StageLink& link, StepResult& r);

/// Adds a state tensor into `into` (sizes must match), on `into`'s device.
void accumulate(torch::Tensor& into, const torch::Tensor& values);

}  // namespace tnt::train
