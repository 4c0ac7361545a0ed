// Private: deterministic mode's training step (CompileOptions().deterministic
// (chunk): the same bits at any rank count). The global batch is cut into
// chunks of `chunk` samples (the last one may be shorter) and each rank's
// micro-batch holds whole chunks (DistributeOptions::granularity). For
// every chunk on its own:
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
#include <tarantella/data/element.h>

#include "dp/exact_sum.h"
#include "train/step/train_step.h"

namespace tnt::train {

class DeterministicStep final : public Step {
 public:
  /// Over `engine`'s network: its buffers are reset per chunk and
  /// averaged. The seed (the same on every rank) and the prediction of the
  /// fixed-point exponents are the engine's counters, kept across fits and
  /// in checkpoints, so that a resumed run predicts — and rounds — exactly
  /// as the uninterrupted one. Collective: agrees on a seed if there is none.
  explicit DeterministicStep(StepContext context);

  /// One micro-step on the rank's chunks of the global batch (epoch, step).
  StepResult run(const StepInput& in) override;

 private:
  /// This rank's chunks of `in.mb`, starting at global chunk `first`,
  /// summed exactly over all ranks: [gradients..., state, buffers...].
  std::vector<torch::Tensor> sum_chunks(const StepInput& in, std::int64_t first,
                                        const std::vector<torch::Tensor>& base);
  /// One chunk's part of the sum: forward, backward, its state added to
  /// this rank's.
  std::vector<torch::Tensor> chunk_part(const data::Element& e, std::int64_t n);
  /// The sums into the cycle's gradient and state, the buffers averaged.
  void add_sums(const std::vector<torch::Tensor>& sums, const StepInput& in,
                const std::vector<torch::Tensor>& base);

  StepContext c_;
  std::int64_t chunk_;
  std::uint64_t seed_;
  std::optional<dp::ExactSum> sum_;      // gradients, state, buffers of a step
  std::vector<int>& exponents_;          // predicted from the previous step
  std::vector<torch::Tensor> gradient_;  // float64, the cycle's so far
  torch::Tensor state_;                  // float64, the cycle's global state so far
  Clock::duration waited_{};             // this step's time in the exact sum's exchange
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
