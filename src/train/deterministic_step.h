// Private: deterministic mode's training step (CompileOptions().deterministic
// (chunk), issue 16). The global batch is cut into chunks of `chunk` samples
// (the last one may be shorter) and each rank's micro-batch holds whole
// chunks (DistributeOptions::granularity). For every chunk on its own:
//   buffers reset to the step's start, a random seed of its own (from the
//   fit's seed, the global batch and the chunk's index), forward, the loss
//   summed over the chunk, backward
// and the chunks' gradients, loss/metric states and buffer values are summed
// exactly over all chunks of all ranks (dp/exact_sum.h). A chunk's result
// depends only on its samples and the weights, and the exact sum on nothing
// else, so weights, losses and metrics are bitwise the same at any number of
// ranks, and equal to a single process without MPI. Buffers (BatchNorm's
// running statistics) become the mean of the chunks' updates.
//
// Chunks are converted and added as they are computed (dp::ExactSum), with
// exponents predicted from the previous step; when this step's values do not
// fit them (the first step, or a jump by more than 2^8), every rank redoes
// the step's chunks with fitting ones. No overlap: the gradients are
// exchanged after the last chunk, in one collective; the price of the mode
// is measured in bench/train_step/modes.sh.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include <torch/types.h>

#include <tarantella/comm/process_group.h>
#include <tarantella/data/distribute.h>

#include "dp/exact_sum.h"
#include "train/train_step.h"

namespace tnt::train {

class DeterministicStep {
 public:
  /// `buffers`: the network's buffers (reset per chunk, averaged); `seed`:
  /// the same on every rank (the model's); `exponents`: the prediction of
  /// the fixed-point exponents, kept by the caller across fits and in
  /// checkpoints (empty at first), so that a resumed run predicts — and
  /// rounds — exactly as the uninterrupted one.
  DeterministicStep(StepModel model, std::vector<torch::Tensor> trainable,
                    std::vector<torch::Tensor> buffers, torch::optim::Optimizer& optimizer,
                    StepRules rules, comm::ProcessGroup group, std::int64_t chunk,
                    std::uint64_t seed, std::vector<int>& exponents);

  /// One micro-step on `mb`, the rank's chunks of global batch `batch_key`
  /// (unique within the fit, e.g. epoch and step). `cycle`: micro-steps in
  /// this accumulation cycle; `reduce`: it ends here (the optimizer steps).
  /// This rank's own state increment is added to `pending`.
  StepResult run(const data::MicroBatch& mb, std::uint64_t batch_key, std::int64_t cycle,
                 bool reduce, std::vector<double>& pending, std::int64_t& optimizer_steps,
                 Clock::time_point data_begin, Clock::time_point data_end);

 private:
  StepModel model_;
  std::vector<torch::Tensor> trainable_;
  std::vector<torch::Tensor> buffers_;
  torch::optim::Optimizer& optimizer_;
  StepRules rules_;
  comm::ProcessGroup group_;
  std::int64_t chunk_;
  std::uint64_t seed_;
  std::optional<dp::ExactSum> sum_;      // gradients, state, buffers of a step
  std::vector<int>& exponents_;          // predicted from the previous step
  std::vector<torch::Tensor> gradient_;  // float64, the cycle's so far
  torch::Tensor state_;                  // float64, the cycle's global state so far
};

/// The loss/metric state of an evaluation in deterministic mode: each chunk
/// of `mb` forwarded on its own; its state appended to `parts`.
void evaluate_chunks(const StepModel& model, const data::MicroBatch& mb, std::int64_t chunk,
                     std::vector<std::vector<torch::Tensor>>& parts);

/// LibTorch's intra-op threads set to one while it lives (deterministic
/// mode: a kernel's reduction order may depend on the thread count, which
/// the launcher sets from the ranks per node), the previous count restored.
class SingleThreadScope {
 public:
  SingleThreadScope();
  ~SingleThreadScope();
  SingleThreadScope(const SingleThreadScope&) = delete;
  SingleThreadScope& operator=(const SingleThreadScope&) = delete;

 private:
  int previous_;
};

/// A seed for the fit, the same on every rank: drawn by the group's master
/// from its CPU generator and broadcast. Collective.
std::uint64_t shared_seed(const comm::ProcessGroup& group);

/// Chunks of a global batch of `global` samples.
std::int64_t chunk_count(std::int64_t global, std::int64_t chunk);

}  // namespace tnt::train
