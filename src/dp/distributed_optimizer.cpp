// DistributedOptimizer (see the header): the wrapped optimizer steps on
// gradients that a GradientSynchronizer summed over the group. Our own
// param_groups() are copies of the wrapped one's (the same parameter
// tensors, cloned options), so zero_grad() and learning-rate changes made
// through the torch::optim::Optimizer interface reach the wrapped optimizer:
// step() copies the options over before stepping.
#include <tarantella/base/torch_compat.h>
#include <tarantella/dp/distributed_optimizer.h>

#include <torch/torch.h>

#include <tarantella/base/error.h>
#include <tarantella/dp/share_weight.h>
#include <tarantella/dp/state_sync.h>
#include <tarantella/runtime/runtime.h>

#include "runtime/default_group.h"

namespace tnt::dp {
namespace {

std::vector<torch::optim::OptimizerParamGroup> groups_of(const torch::optim::Optimizer* o) {
  TNT_CHECK(o != nullptr, "DistributedOptimizer needs an optimizer, got a null pointer");
  std::vector<torch::optim::OptimizerParamGroup> out;
  for (const auto& g : o->param_groups()) out.emplace_back(g);
  return out;
}

std::unique_ptr<torch::optim::OptimizerOptions> defaults_of(const torch::optim::Optimizer* o) {
  TNT_CHECK(o != nullptr, "DistributedOptimizer needs an optimizer, got a null pointer");
  return o->defaults().clone();
}

}  // namespace

DistributedOptimizer::DistributedOptimizer(std::unique_ptr<torch::optim::Optimizer> optimizer,
                                           DistributedOptimizerOptions options)
    : torch::optim::Optimizer(groups_of(optimizer.get()), defaults_of(optimizer.get())),
      inner_(std::move(optimizer)),
      group_(default_group(options.group())),
      share_(options.share()) {
  compat::copy_group_options(*this, *inner_);
  TNT_CHECK(group_.is_member(), "DistributedOptimizer: this rank is not a member of the ",
            group_.describe(), ": build it only on the ranks of its group");
  std::vector<torch::Tensor> params;
  const auto& groups = inner_->param_groups();
  for (std::size_t g = 0; g < groups.size(); ++g) {
    for (std::size_t k = 0; k < groups[g].params().size(); ++k) {
      const torch::Tensor& p = groups[g].params()[k];
      if (p.requires_grad()) {
        params.push_back(p);
      } else {
        frozen_.emplace_back(g, k);
      }
    }
  }
  // Every rank starts from rank 0's weights and optimizer state.
  broadcast_tensors(group_, params);
  broadcast_optimizer_state(group_, *inner_);
  // Unset options take the run's configuration (TNT_FUSION_THRESHOLD,
  // TNT_OVERLAP): this class is a facade for the user's own loop.
  const Config config = current_config();
  sync_ = std::make_unique<GradientSynchronizer>(
      group_, params,
      SyncOptions()
          .fusion_threshold_bytes(options.fusion_threshold_bytes().value_or(
              config.fusion_threshold_bytes))
          .overlap(options.overlap().value_or(config.overlap)));
  arm();
}

DistributedOptimizer::~DistributedOptimizer() = default;

std::function<double()> share_weight(std::shared_ptr<const data::BatchShare> share, int ranks) {
  return [share = std::move(share), ranks] {
    if (!share) return 1.0 / ranks;
    const auto [local, global] = share->get();
    TNT_CHECK(global != data::BatchShare::kUnknownGlobal,
              "DistributedOptimizer: the loader's dataset skips bad samples, so its global batch "
              "size is only known by counting over the ranks: train with Model.fit (which "
              "counts), or read the images with on_error='raise' after removing the bad files");
    TNT_CHECK(global > 0, "DistributedOptimizer: the loader has not handed out a batch yet, "
                          "so this rank's share is unknown: draw the batch before backward()");
    return static_cast<double>(local) / static_cast<double>(global);
  };
}

void DistributedOptimizer::arm() {
  sync_->begin_step(share_weight(share_, group_.size()), /*reduce=*/true);
}

torch::Tensor DistributedOptimizer::step(LossClosure closure) {
  TNT_CHECK(!closure, "DistributedOptimizer::step() takes no closure: a closure re-runs forward "
                      "and backward, which would send the gradients again; call backward() "
                      "yourself, then step()");
  // The next cycle starts however this one ends, also with an error here
  // (a refused gradient, the wrapped optimizer's own): else the next
  // gradients would stay this rank's.
  try {
    return finish_and_step();
  } catch (...) {
    if (!sync_->armed()) arm();
    throw;
  }
}

torch::Tensor DistributedOptimizer::finish_and_step() {
  sync_->finish();
  // A parameter frozen when the optimizer was wrapped has no hook: its
  // gradient would be this rank's alone, and the ranks would drift apart.
  for (const auto& [g, k] : frozen_) {
    const torch::Tensor& p = inner_->param_groups()[g].params()[k];
    TNT_CHECK(!p.requires_grad() || !p.grad().defined(), "DistributedOptimizer: parameter ", k,
              " of parameter group ", g,
              " has a gradient, but it did not require one when the optimizer was wrapped, "
              "so its gradient is not summed over the ranks (they would drift apart): wrap "
              "the optimizer after unfreezing it, or wrap it again now (and drop this one, "
              "with the LR schedulers made for it)");
  }
  auto& ours = param_groups();
  auto& theirs = inner_->param_groups();
  for (std::size_t i = 0; i < ours.size() && i < theirs.size(); ++i) {
    theirs[i].set_options(ours[i].options().clone());
  }
  torch::Tensor out = inner_->step();
  arm();
  return out;
}

void DistributedOptimizer::zero_grad(bool /*set_to_none*/) {
  // Every parameter's .grad, also one unfrozen since wrapping (LibTorch's),
  // then the buckets.
  torch::optim::Optimizer::zero_grad();
  if (sync_->armed()) {
    sync_->discard();
  } else {
    arm();  // a cycle that ended without its step
  }
}

void DistributedOptimizer::save(torch::serialize::OutputArchive& archive) const {
  inner_->save(archive);
}

void DistributedOptimizer::load(torch::serialize::InputArchive& archive) {
  inner_->load(archive);
  auto& ours = param_groups();
  const auto& theirs = inner_->param_groups();
  for (std::size_t i = 0; i < ours.size() && i < theirs.size(); ++i) {
    ours[i].set_options(theirs[i].options().clone());
  }
}

}  // namespace tnt::dp
