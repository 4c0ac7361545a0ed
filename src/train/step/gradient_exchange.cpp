// The gradient exchange of a step: the synchroniser, the optimizer's shards
// or per-bucket steps, the auto-tuner (see gradient_exchange.h).
#include "train/step/gradient_exchange.h"

#include <fmt/format.h>
#include <torch/torch.h>

#include <tarantella/base/error.h>
#include <tarantella/base/logging.h>

#include "dp/bucket_steps.h"
#include "dp/optimizer_shards.h"
#include "dp/optimizer_state.h"
#include "train/step/autotune.h"

namespace tnt::train {

GradientExchange::GradientExchange(const comm::ProcessGroup& group, const EngineOptions& options)
    : group_(group), options_(options) {}

GradientExchange::~GradientExchange() = default;

void GradientExchange::compiled(std::vector<torch::Tensor> trainable,
                                torch::optim::Optimizer& optimizer,
                                const CompileOptions& compiled, std::int64_t state_size) {
  drop();  // shards belong to the optimizer replaced here
  trainable_ = std::move(trainable);
  optimizer_ = &optimizer;
  compiled_ = &compiled;
  state_size_ = state_size;
}

void GradientExchange::drop() {
  shards_.reset();
  bucket_steps_.reset();
  sync_.reset();
}

void GradientExchange::unshard() {
  if (!shards_) return;
  shards_->unshard();
  drop();
}

std::size_t GradientExchange::configured_threshold() const {
  return compiled_->fusion_threshold_bytes().value_or(options_.fusion_threshold_bytes());
}

void GradientExchange::start_autotuner() {
  if (autotuner_) return;
  autotuner_ = std::make_shared<AutoTuner>(  // collective: checks the plan
      group_, AutoTuneOptions::from_engine(options_, configured_threshold()));
}

void GradientExchange::override_setting(std::optional<std::size_t> threshold,
                                        std::optional<bool> overlap) {
  if (threshold_override_ == threshold && overlap_override_ == overlap) return;
  threshold_override_ = threshold;
  overlap_override_ = overlap;
  unshard();  // the shards follow the buckets
  drop();
}

dp::GradientSynchronizer& GradientExchange::retune() {
  const EngineSetting wanted = autotuner_->setting();
  override_setting(wanted.threshold_bytes, wanted.overlap);
  return synchronizer();
}

dp::GradientSynchronizer& GradientExchange::synchronizer() {
  if (sync_) return *sync_;
  TNT_CHECK(compiled_ != nullptr && optimizer_ != nullptr,
            "internal error: the gradient exchange is used before compile()");
  const std::size_t threshold = threshold_override_.value_or(configured_threshold());
  const bool shard = sharded();
  sync_ = std::make_unique<dp::GradientSynchronizer>(
      group_, trainable_,
      dp::SyncOptions()
          .fusion_threshold_bytes(threshold)
          .compression(compiled_->compression())
          .extras_numel(state_size_)
          .overlap(overlap_override_.value_or(options_.overlap()))
          .shard(shard));
  log::debug(fmt::format("{} gradient buckets (fusion threshold {} bytes)", sync_->buckets().size(),
                         threshold));
  if (shard) {
    dp::GradientSynchronizer* engine = sync_.get();
    shards_ = std::make_unique<dp::OptimizerShards>(
        group_, trainable_, sync_->buckets(), *optimizer_,
        [engine](std::size_t b, torch::Tensor bucket) { engine->adopt_buffer(b, std::move(bucket)); });
  } else if (updates_per_bucket()) {
    bucket_steps_ = std::make_unique<dp::BucketSteps>(trainable_, sync_->buckets(), *optimizer_);
  }
  return *sync_;
}

// At one rank there is nothing to shard: the plain step is the same.
bool GradientExchange::sharded() const {
  return compiled_ != nullptr && compiled_->shard_optimizer() && group_.size() > 1;
}

bool GradientExchange::updates_per_bucket() const {
  return sharded() || (optimizer_ != nullptr && options_.overlap_optimizer() &&
                       group_.size() > 1 && dp::updates_element_wise(*optimizer_));
}

}  // namespace tnt::train
