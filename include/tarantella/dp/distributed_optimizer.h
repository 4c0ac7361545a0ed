// Keep your own training loop: Horovod's DistributedOptimizer for LibTorch.
// Wrap any torch::optim optimizer; the textbook loop
//   optimizer.zero_grad(); loss.backward(); optimizer.step();
// then runs unchanged on every rank, with the fused, overlapped allreduce of
// dp::GradientSynchronizer underneath:
//   * on construction, rank 0's parameters and optimizer state are broadcast
//     (collective), so all ranks start alike;
//   * hooks are armed from construction and again after every step(), so
//     gradients leave for the allreduce while backward runs; step() waits
//     for them, then runs the wrapped optimizer on the summed gradients;
//   * each rank's gradient is weighted by its share of the global batch,
//     n_r / B, read from the loader's BatchShare when the first gradient of
//     the step arrives (exact for uneven and empty shares); without a share,
//     1 / N (Horovod's average, exact when every rank has as many samples);
//   * zero_grad() drops every gradient since the last step(), also those of
//     a backward that is not to count (a GAN's generator loss through the
//     discriminator): the buckets start afresh, and follow a model moved to
//     another device after wrapping. Gradients are always set to none (the
//     hooks hand autograd's fresh gradient over). Call it on the
//     DistributedOptimizer, not through a torch::optim::Optimizer&
//     (LibTorch's zero_grad is not virtual). Learning-rate changes through
//     param_groups() work.
// It is a torch::optim::Optimizer, so functions taking
// `torch::optim::Optimizer&` accept it. The wrapped optimizer is taken by
// value (LibTorch optimizers are move-only): pass a temporary or std::move. step(closure) is not supported
// (closures re-run forward/backward, which would send the gradients twice).
#pragma once

#include <memory>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

#include <torch/optim/optimizer.h>

#include <tarantella/comm/process_group.h>
#include <tarantella/data/batch_share.h>
#include <tarantella/dp/gradient_sync.h>

namespace tnt::dp {

/// Example: tnt::dp::DistributedOptimizerOptions().share(loader->share()).group(g)
class DistributedOptimizerOptions {
 public:
  /// Where this rank's share of each batch comes from (a distributed loader).
  DistributedOptimizerOptions& share(std::shared_ptr<const data::BatchShare> v) {
    share_ = std::move(v);
    return *this;
  }
  /// The ranks to synchronize over (default: the world group).
  DistributedOptimizerOptions& group(comm::ProcessGroup v) {
    group_ = std::move(v);
    return *this;
  }
  /// Bucket size in bytes (default: TNT_FUSION_THRESHOLD, 32 KiB).
  DistributedOptimizerOptions& fusion_threshold_bytes(std::size_t v) {
    threshold_ = v;
    return *this;
  }
  const std::shared_ptr<const data::BatchShare>& share() const { return share_; }
  const comm::ProcessGroup& group() const { return group_; }
  /// Whether buckets leave while backward runs (default: TNT_OVERLAP, on);
  /// off sends every bucket after backward, for comparison.
  DistributedOptimizerOptions& overlap(bool v) {
    overlap_ = v;
    return *this;
  }
  const std::optional<std::size_t>& fusion_threshold_bytes() const { return threshold_; }
  const std::optional<bool>& overlap() const { return overlap_; }

 private:
  std::shared_ptr<const data::BatchShare> share_;
  comm::ProcessGroup group_;
  std::optional<std::size_t> threshold_;
  std::optional<bool> overlap_;
};

/// Example:
///   auto loader = tnt::data::make_data_loader(std::move(train), 64);
///   tnt::dp::DistributedOptimizer optimizer(
///       torch::optim::SGD(model->parameters(), torch::optim::SGDOptions(0.01)), loader->share());
///   for (auto& batch : *loader) {
///     optimizer.zero_grad();
///     auto loss = torch::nll_loss(model->forward(batch.data), batch.target);
///     loss.backward();
///     optimizer.step();
///   }
class DistributedOptimizer : public torch::optim::Optimizer {
 public:
  template <typename O, typename = std::enable_if_t<
                            std::is_base_of_v<torch::optim::Optimizer, std::decay_t<O>>>>
  explicit DistributedOptimizer(O&& optimizer,
                                DistributedOptimizerOptions options = DistributedOptimizerOptions())
      : DistributedOptimizer(std::make_unique<std::decay_t<O>>(std::forward<O>(optimizer)),
                             std::move(options)) {}
  template <typename O, typename = std::enable_if_t<
                            std::is_base_of_v<torch::optim::Optimizer, std::decay_t<O>>>>
  DistributedOptimizer(O&& optimizer, std::shared_ptr<const data::BatchShare> share)
      : DistributedOptimizer(std::forward<O>(optimizer),
                             DistributedOptimizerOptions().share(std::move(share))) {}
  DistributedOptimizer(std::unique_ptr<torch::optim::Optimizer> optimizer,
                       DistributedOptimizerOptions options);
  ~DistributedOptimizer() override;

  /// Waits for the summed gradients, then steps the wrapped optimizer.
  torch::Tensor step(LossClosure closure = nullptr) override;
  /// Drops the gradients received since the last step() (see above);
  /// `set_to_none` is accepted for LibTorch's signature: they are always
  /// set to none.
  void zero_grad(bool set_to_none = true);
  void save(torch::serialize::OutputArchive& archive) const override;
  void load(torch::serialize::InputArchive& archive) override;

  /// The wrapped optimizer.
  torch::optim::Optimizer& wrapped() { return *inner_; }
  const comm::ProcessGroup& group() const { return group_; }

 private:
  void arm();
  torch::Tensor finish_and_step();  ///< step()'s work, which re-arms at its end
  std::unique_ptr<torch::optim::Optimizer> inner_;
  comm::ProcessGroup group_;
  std::shared_ptr<const data::BatchShare> share_;
  std::unique_ptr<GradientSynchronizer> sync_;
  /// (group, index) of the parameters frozen when wrapped: they have no hook.
  std::vector<std::pair<std::size_t, std::size_t>> frozen_;
};

}  // namespace tnt::dp

namespace tnt {
using dp::DistributedOptimizer;
}  // namespace tnt
