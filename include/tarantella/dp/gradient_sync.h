// The data-parallel gradient engine. An autograd hook per parameter copies
// the parameter's gradient, already weighted by n_r / B, into its bucket;
// when a bucket is complete its allreduce (sum) is enqueued on the
// communication engine at once, so communication runs while backward
// continues. Buckets are enqueued strictly in bucket order on every rank
// (MPI collectives must match), also when parameters finish out of order or
// get no gradient at all in a step (they contribute zeros). finish() waits
// for every bucket and points each parameter's .grad at its slice of the
// reduced bucket, ready for the optimizer: no extra copy.
//
// Why weighting in the hook: the serial gradient of a batch of B samples is
// the mean over samples; rank r's local mean over its n_r samples times
// n_r / B, summed over ranks, is exactly that, also for uneven micro-batches
// and ranks with no sample (weight 0).
#pragma once

#include <chrono>

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include <torch/types.h>

#include <tarantella/base/arg.h>
#include <tarantella/comm/process_group.h>
#include <tarantella/dp/bucket_plan.h>

namespace tnt::dp {

/// Gradient compression on the wire.
enum class Compression { None, Float16, BFloat16 };

/// Options of a GradientSynchronizer.
///
/// Example:
///   tnt::dp::SyncOptions().fusion_threshold_bytes(64 * 1024).extras_numel(3)
struct SyncOptions {
  TNT_ARG(std::size_t, fusion_threshold_bytes) = 32 * 1024;
  TNT_ARG(Compression, compression) = Compression::None;
  /// Number of float64 values (loss and metric state) summed over ranks with
  /// the gradients. They ride in the tail of the last bucket when its dtype
  /// holds them exactly (float64, or float32: integer counts exact up to
  /// 2^24 per step); otherwise (16-bit parameters, compression) they go as
  /// one float64 allreduce right behind the last bucket.
  TNT_ARG(std::int64_t, extras_numel) = 0;
  /// false: no allreduce starts before backward has finished (finish()
  /// sends every bucket) — the "overlap off" baseline of benchmarks.
  TNT_ARG(bool, overlap) = true;
  /// ZeRO stage 1: each bucket is reduce-scattered instead of allreduced;
  /// finish() leaves .grad undefined and reduced_slices() gives this rank's
  /// slice of every bucket (dp::shard_range). The extras travel on their own.
  TNT_ARG(bool, shard) = false;
};

/// Synchronizes gradients of `params` across the ranks of `group`.
///
/// Example:
///   tnt::dp::GradientSynchronizer sync(tnt::world(), params, tnt::dp::SyncOptions());
///   // after forward: loss and metric state of this step are known
///   sync.begin_step(double(n_local) / n_global, /*reduce=*/true, state_increment);
///   loss.backward();
///   torch::Tensor global_state = sync.finish();
///   optimizer.step();
class GradientSynchronizer {
 public:
  GradientSynchronizer(comm::ProcessGroup group, std::vector<torch::Tensor> params,
                       SyncOptions options);
  /// Removes the hooks; waits for any bucket still in flight.
  ~GradientSynchronizer();
  GradientSynchronizer(const GradientSynchronizer&) = delete;
  GradientSynchronizer& operator=(const GradientSynchronizer&) = delete;

  /// Arms the hooks for one (micro-)step, between forward and backward:
  /// gradients are scaled by `weight` and added to the buckets. Buckets
  /// follow a model moved to another device, at its first gradient of a
  /// cycle (not with shard(true)). With
  /// `reduce` false (gradient accumulation) nothing is sent; the next step
  /// adds to the same buckets. `extras` (extras_numel values, e.g. loss and
  /// metric state) are summed over ranks along with the last bucket.
  void begin_step(double weight, bool reduce, const torch::Tensor& extras = torch::Tensor());
  /// The same, with the weight asked of `weight_source` once, when the first
  /// gradient arrives (or at finish()): for loops that arm the hooks before
  /// the step's batch is drawn (DistributedOptimizer). No extras.
  void begin_step(std::function<double()> weight_source, bool reduce);
  /// Whether begin_step() was called and finish() not yet.
  bool armed() const;
  /// Drops what the hooks received since the last finish(), the whole
  /// accumulation cycle (a backward that is not to count: a GAN's generator
  /// loss through the discriminator, a gradient penalty's): waits for the
  /// buckets already sent (every rank must discard alike, as every rank
  /// sent them), leaves .grad undefined, and stays armed, with the weight
  /// asked again of its source. DistributedOptimizer::zero_grad() calls
  /// it; nothing to do when not armed.
  void discard();
  /// After backward: sends the buckets not yet sent (parameters without a
  /// gradient count as zeros), waits for all, sets every .grad to the
  /// reduced gradient, and returns the float64 sum over ranks of the extras
  /// (undefined if none). With `reduce` false: returns an undefined tensor
  /// and leaves .grad undefined.
  /// `on_reduced(b)`, if given, runs as soon as bucket b's result is in
  /// place (its parameters' .grad set; with shard(true), its slice in
  /// reduced_slices()), in bucket order, while later buckets may still be
  /// on the wire: the optimizer step of a bucket can start there.
  torch::Tensor finish(const std::function<void(std::size_t)>& on_reduced = nullptr);

  const std::vector<Bucket>& buckets() const;
  /// The options it was made with.
  const SyncOptions& options() const;
  /// With SyncOptions().shard(true), after finish() of a reducing step:
  /// this rank's slice of each reduced bucket, in bucket order.
  const std::vector<torch::Tensor>& reduced_slices() const;
  /// Shard mode: a bucket's buffer is let go as soon as its reduce-scatter
  /// is done (before on_reduced), so that the allgather of the updated
  /// parameters, which needs a whole bucket too, does not double the memory.
  /// Give a bucket-sized tensor back here (the allgather's result, once
  /// copied out); a bucket not given back is allocated anew at the next
  /// begin_step().
  void adopt_buffer(std::size_t b, torch::Tensor buffer);
  /// Handles of the last reduced step's allreduces, in bucket order.
  const std::vector<comm::Handle>& last_handles() const;
  /// When each of those allreduces was enqueued, in bucket order (for the
  /// timeline: enqueued -> started -> finished).
  const std::vector<std::chrono::steady_clock::time_point>& last_enqueued() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace tnt::dp
