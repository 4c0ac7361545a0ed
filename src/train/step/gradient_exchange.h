// Private: the engine's gradient exchange, as a step sees it: the gradient
// synchroniser (buckets, overlap, compression), the optimizer's shards or
// per-bucket steps made with it, and the auto-tuner that picks its
// settings. Built lazily on first use after compile(), dropped when what it
// was made from changes (a new optimizer, a new setting), and rebuilt.
//
// Why a component of its own: a training step needs exactly this of the
// engine (train/step/step_context.h), and a pipelined schedule needs one per
// stage; it was part of EngineState, beside the optimizer, the counters,
// the position and the loops.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include <torch/types.h>

#include <tarantella/comm/process_group.h>
#include <tarantella/dp/gradient_sync.h>
#include <tarantella/train/engine_options.h>
#include <tarantella/train/options.h>

namespace torch::optim {
class Optimizer;
}

namespace tnt {
class AutoTuner;
namespace dp {
class BucketSteps;
class OptimizerShards;
}  // namespace dp
}  // namespace tnt

namespace tnt::train {

class GradientExchange {
 public:
  /// `group` and `options` must outlive it (the engine's own).
  GradientExchange(const comm::ProcessGroup& group, const EngineOptions& options);
  ~GradientExchange();
  GradientExchange(const GradientExchange&) = delete;
  GradientExchange& operator=(const GradientExchange&) = delete;

  /// What it is built over, from compile(): the trainable parameters, the
  /// optimizer, the compiled settings and the size of the loss/metric state
  /// that travels with the last bucket. Drops what was built. The arguments
  /// must outlive it or the next compile().
  void compiled(std::vector<torch::Tensor> trainable, torch::optim::Optimizer& optimizer,
                const CompileOptions& compiled, std::int64_t state_size);

  /// The synchroniser, built on first use (or rebuilt after a drop).
  dp::GradientSynchronizer& synchronizer();
  /// The optimizer's shards (a sharded optimizer) or per-bucket steps, once
  /// synchronizer() built them; null otherwise.
  dp::OptimizerShards* shards() const { return shards_.get(); }
  dp::BucketSteps* bucket_steps() const { return bucket_steps_.get(); }
  /// Whether the optimizer steps bucket by bucket (sharded, or element-wise
  /// with the optimizer overlap on; more than one rank).
  bool updates_per_bucket() const;
  /// Drops the synchroniser and what was made with it.
  void drop();
  /// With a sharded optimizer: puts it back in full form on every rank and
  /// drops (the next step shards again). Collective.
  void unshard();

  /// Auto-tuning: made on the first fit that tunes; retune() rebuilds the
  /// synchroniser for the tuner's current setting (between cycles only).
  AutoTuner* autotuner() const { return autotuner_.get(); }
  void start_autotuner();
  /// A tuner of the caller's own (tests: fewer trials).
  void set_autotuner(std::shared_ptr<AutoTuner> tuner) { autotuner_ = std::move(tuner); }
  dp::GradientSynchronizer& retune();
  /// Settings chosen by auto-tuning (or set by a test), over the options.
  void override_setting(std::optional<std::size_t> threshold, std::optional<bool> overlap);
  std::optional<std::size_t> threshold_override() const { return threshold_override_; }
  std::optional<bool> overlap_override() const { return overlap_override_; }

 private:
  bool sharded() const;
  std::size_t configured_threshold() const;

  const comm::ProcessGroup& group_;
  const EngineOptions& options_;
  std::vector<torch::Tensor> trainable_;
  torch::optim::Optimizer* optimizer_ = nullptr;
  const CompileOptions* compiled_ = nullptr;
  std::int64_t state_size_ = 0;
  std::unique_ptr<dp::GradientSynchronizer> sync_;
  /// After the synchroniser: destroyed first (they adopt its buffers).
  std::unique_ptr<dp::OptimizerShards> shards_;
  std::unique_ptr<dp::BucketSteps> bucket_steps_;
  std::optional<std::size_t> threshold_override_;
  std::optional<bool> overlap_override_;
  std::shared_ptr<AutoTuner> autotuner_;
};

}  // namespace tnt::train
