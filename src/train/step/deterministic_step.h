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
//
// With pipeline stages the chunks are the micro-batches of the stage's
// schedule (1F1B or GPipe, as TrainStep's; without stages that is forward,
// backward, chunk after chunk). Three things keep the bits of one rank:
//   - a chunk's random stream runs through the whole model: the first stage
//     seeds it, and the generator's state travels with the activations
//     (forward_on_stage);
//   - each stage sums its own tensors exactly over its replicas, and the
//     decision to refit the exponents is agreed over the pipeline, so the
//     whole model refits (and the step is replayed through every stage) or
//     none of it, as one sum over the unsplit model would;
//   - the exponents are kept by tensor name (Counters), so a checkpoint
//     resumes with the same predictions at another layout.
#pragma once

#include <cstdint>
#include <exception>
#include <functional>
#include <map>
#include <optional>
#include <string>
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
  /// A chunk between its forward and its backward.
  struct ChunkInFlight {
    StageForward stage;
    torch::Tensor loss;                  ///< on the last stage
    torch::Tensor state;                 ///< on the last stage, float64
    std::vector<torch::Tensor> buffers;  ///< as its forward left them
  };

  /// This rank's chunks of `in.mb`, starting at global chunk `first`,
  /// summed exactly over all ranks: [gradients..., state, buffers...].
  std::vector<torch::Tensor> sum_chunks(const StepInput& in, std::int64_t first,
                                        const std::vector<torch::Tensor>& base);
  /// The stage's schedule over the chunks: each chunk's part added to the
  /// sum, its state to `mine`. `seed(i)` seeds chunk i's random stream.
  void run_chunks(const std::vector<data::MicroBatch>& chunks,
                  const std::function<void(std::int64_t)>& seed,
                  const std::vector<torch::Tensor>& base, torch::Tensor& mine);
  ChunkInFlight chunk_forward(const data::MicroBatch& chunk, int micro,
                              const std::function<void()>& seed,
                              const std::vector<torch::Tensor>& base);
  /// The chunk's part of the sum: its backward's gradients (of its summed
  /// loss), its state, its buffers.
  std::vector<torch::Tensor> chunk_backward(ChunkInFlight& f, const data::MicroBatch& chunk,
                                            int micro);
  /// The sums into the cycle's gradient and state, the buffers averaged.
  void add_sums(const std::vector<torch::Tensor>& sums, const StepInput& in,
                const std::vector<torch::Tensor>& base);
  /// The predicted exponents of the parts' tensors, by name; and back.
  std::vector<int> predicted_exponents() const;
  void keep_exponents(const std::vector<int>& exponents);

  StepContext c_;
  std::int64_t chunk_;
  std::uint64_t seed_;
  std::optional<dp::ExactSum> sum_;      // gradients, state, buffers of a step
  std::vector<std::string> part_names_;  // of the sum's tensors
  std::map<std::string, int>& exponents_;  // predicted from the previous step
  std::vector<torch::Tensor> gradient_;  // float64, the cycle's so far
  torch::Tensor state_;                  // float64, the cycle's global state so far
  Clock::duration waited_{};             // this step's time in the exact sum's exchange
};

/// The loss/metric state of an evaluation in deterministic mode: each chunk
/// of `mb` forwarded on its own (through the stages, with `stage`: chunk i
/// is micro-batch i); its state appended to `parts` (on the last stage).
void evaluate_chunks(const StepModel& model, const data::MicroBatch& mb, std::int64_t chunk,
                     std::vector<std::vector<torch::Tensor>>& parts, StageLink* stage = nullptr);

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

/// Deterministic mode on a GPU: LibTorch's deterministic algorithms while
/// it lives. Some CUDA kernels add with atomics, so their sums change from
/// run to run; with deterministic algorithms LibTorch takes a deterministic
/// kernel where it has one (index_add_, scatter_add_, index_put_ with
/// accumulate) and refuses the operation where it has none (interpolation's
/// backward, a reduced nll_loss2d, cumsum of floats, ...;
/// explain_missing_deterministic_kernel names deterministic mode in that
/// error). On the CPU it changes nothing (LibTorch's CPU kernels are
/// deterministic at one thread). Scopes nest and may overlap across threads
/// (in-process ranks): the first one switches the algorithms on if they were
/// off, the last one out restores them; a user's own setting (tnt::set_seed)
/// is kept. On a GPU it also applies use_deterministic_cuda() (no TF32, no
/// cuDNN benchmarking, cuBLAS's workspace), which stays for the process;
/// an invalid CUBLAS_WORKSPACE_CONFIG is refused here, with the fix.
class DeterministicKernelsScope {
 public:
  explicit DeterministicKernelsScope(const c10::Device& device);
  ~DeterministicKernelsScope();
  DeterministicKernelsScope(const DeterministicKernelsScope&) = delete;
  DeterministicKernelsScope& operator=(const DeterministicKernelsScope&) = delete;

 private:
  bool active_ = false;
};

/// Throws tnt::Error naming deterministic mode and the fix when `e` is
/// LibTorch's refusal of an operation without a deterministic kernel (a
/// c10::Error, or the Python error of a Python module or loss that met
/// one); returns otherwise (the caller rethrows `e`).
void explain_missing_deterministic_kernel(const std::exception& e);

/// A seed for the fit, the same on every rank: drawn by the group's master
/// from its CPU generator and broadcast. Collective.
std::uint64_t shared_seed(const comm::ProcessGroup& group);

/// Chunks of a global batch of `global` samples.
std::int64_t chunk_count(std::int64_t global, std::int64_t chunk);

}  // namespace tnt::train
