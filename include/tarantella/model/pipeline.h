// Pipeline stages beside data parallelism: a torch::nn::Sequential cut
// into P stages over the ranks, each global batch run as M micro-batches
// through them (1F1B by default), D = N / P replicas of the pipeline
// reducing each stage's gradients together. docs/guide/pipelining.md has
// the layout, the schedules and what combines with what.
#pragma once

#include <optional>
#include <string>

#include <torch/nn/cloneable.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

namespace tnt {

/// How a model is cut into pipeline stages.
///
/// Example:
///   torch::nn::Sequential net(torch::nn::Linear(784, 512), torch::nn::ReLU(),
///                             tnt::nn::SplitPoint(),
///                             torch::nn::Linear(512, 10));
///   tnt::Model model(net, tnt::PipelineOptions().stages(2).micro_batches(8));
class PipelineOptions {
 public:
  /// P: the stages (1: no pipeline, plain data parallelism). The ranks of
  /// the model's group must be a multiple of it.
  PipelineOptions& stages(int value) {
    stages_ = value;
    return *this;
  }
  int stages() const { return stages_; }
  /// M: micro-batches per replica and global batch. Default 4 (P - 1),
  /// at least 1, which keeps the idle share of a step, (P-1)/(M+P-1), at
  /// or below 1/5.
  PipelineOptions& micro_batches(int value) {
    micro_batches_ = value;
    return *this;
  }
  std::optional<int> micro_batches() const { return micro_batches_; }
  /// "1f1b" (the default: a stage holds at most P micro-batches'
  /// activations) or "gpipe" (all M forwards, then all backwards).
  PipelineOptions& schedule(std::string value) {
    schedule_ = std::move(value);
    return *this;
  }
  const std::string& schedule() const { return schedule_; }

 private:
  int stages_ = 1;
  std::optional<int> micro_batches_;
  std::string schedule_ = "1f1b";
};

/// Where a rank sits in a pipelined tnt::Model: N ranks run `replicas`
/// (D = N / P) copies of a `stages`-stage (P) pipeline; a pipeline is P
/// consecutive ranks (rank r holds stage r % P of pipeline r / P), and a
/// stage's D replicas reduce its gradients together.
///
/// Example (rank 3 of 4, 2 stages):
///   if (auto where = model.pipeline()) {   // {stage 1, stages 2, replica 1, replicas 2}
///     if (where->stage == 0) load_my_inputs();
///   }
struct PipelinePosition {
  int stage = 0;     ///< this rank's stage, 0 .. stages - 1
  int stages = 1;    ///< P
  int replica = 0;   ///< this rank's pipeline, 0 .. replicas - 1
  int replicas = 1;  ///< D = N / P
};

namespace nn {

/// Marks a stage boundary in a torch::nn::Sequential: the layers before it
/// and after it go to different stages. An identity everywhere else (and
/// with one stage). A Sequential without any is cut automatically into
/// stages of about equal parameter count.
class SplitPointImpl : public torch::nn::Cloneable<SplitPointImpl> {
 public:
  void reset() override {}
  torch::Tensor forward(torch::Tensor x) { return x; }
};
TORCH_MODULE(SplitPoint);

}  // namespace nn
}  // namespace tnt
