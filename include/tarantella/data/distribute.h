// Distribution: turns a pipeline batched with the GLOBAL batch size B into
// this rank's stream of micro-batches for N ranks.
//
// The split rule. Global batch k holds L samples (L = B, or fewer for a
// short last batch). Rank r gets L/N samples, one more for the first L mod N
// ranks, taken as one contiguous run: rank r's run starts after the runs of
// ranks 0..r-1. Concatenating the ranks' micro-batches in rank order gives
// back global batch k exactly. When L < N, the last N-L ranks get an EMPTY
// micro-batch (first dimension 0, same trailing shapes and dtypes), so every
// rank runs the same number of steps. Every rank computes the same shuffle
// order: the user's seed, else kDefaultShuffleSeed, mixed with the epoch.
//
// How the pipeline is rewritten. distribute() walks the chain of nodes above
// the batch node (prefetch, repeat, take, skip, shard, shuffle, cache,
// concatenate, map: they act on whole batches) and rebuilds it with the batch
// node replaced by a micro-batch node for (rank, N). That node knows B; for
// batch k it asks its input for samples k*B+lo .. k*B+hi only. Below a batch
// the nodes offer random access (see dataset.h), so the request travels down
// the pipeline: map computes only those samples, shuffle translates the
// indices through its permutation (computed identically on every rank: cheap,
// it is indices) and the source gathers just those rows. Per-sample work per
// rank thus falls as 1/N. Below a filter or unbatch the pipeline is
// sequential: the micro-batch node then draws the L samples of the batch as
// deferred computations and forces only its own. What lies below the filter
// runs on every rank (it decides where batches begin); what lies above it
// runs on the rank's share only.
//
// A map after batch receives the micro-batch, not the global batch: a
// function that treats samples independently (normalizing, casting,
// augmenting) gives the same result; one that mixes samples does not.
// enumerate after batch numbers the global batches (every rank's micro-batch
// k gets k); zip after batch splits every input the same way, so their rows
// stay paired; unbatch ends the batch level (batch again after it, and that
// batch is the one split). filter after batch and map_seeded after batch
// cannot be split: they are an error that says how to reorder the pipeline.
//
// Variable-length samples. padded_batch without fixed shapes pads each
// rank's micro-batch to the longest sample OF THE MICRO-BATCH, not of the
// global batch: finding the global batch's longest would mean computing
// every sample of it on every rank (or a collective in the input pipeline),
// and it pads more. So the micro-batches concatenate to the global batch
// only after padding them to its shape: rows [lo, hi) of the serial padded
// batch are the micro-batch, extended by padding values. A model that masks
// padding (attention key-padding masks, a loss that ignores padding tokens)
// computes the same per-sample losses at either length; and since each
// rank's gradient is weighted by n_r / B, a loss that is a MEAN OVER SAMPLES
// (e.g. summed over non-padding tokens and divided by the number of samples
// times a constant) gives the serial gradient: sum_r n_r/B * mean_{i in r}
// l_i = mean_i l_i. A mean over the rank's own tokens does not.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include <tarantella/comm/process_group.h>
#include <tarantella/data/dataset.h>

namespace tnt::data {

/// One rank's share of one global batch.
///
/// Example:
///   while (auto mb = it.next()) {
///     auto loss = criterion(model(mb->tensors[0]), mb->tensors[1]);
///     double weight = double(mb->local_size) / mb->global_size;   // n_r / B
///   }
struct MicroBatch {
  /// This rank's samples of global batch `step`: first dimension local_size.
  Element tensors;
  /// Samples on this rank (0 for an empty micro-batch). When the dataset
  /// may skip bad samples (Dataset::may_skip_samples()), those are not
  /// counted, and `tensors` has no tensors at all if every sample was
  /// dropped before this rank ever saw a micro-batch with rows.
  std::int64_t local_size = 0;
  /// Samples in the whole global batch (B, or L for a short last batch),
  /// counting dropped samples: the sum of local_size over ranks is the
  /// number that remain (training computes it with one allreduce).
  std::int64_t global_size = 0;
  /// Index of the global batch in this pass (0, 1, ...).
  std::int64_t step = 0;
};

/// How a dataset is distributed: over a process group (its rank and size),
/// or over an explicit rank and size. With neither, over the world group of
/// the running tnt::Runtime, or as rank 0 of 1 without one.
///
/// Example:
///   auto dist = tnt::data::distribute(ds, tnt::data::DistributeOptions().rank(1).size(4));
///   // an unbatched dataset and a micro-batch size: global batch 16 * N
///   auto dist2 = tnt::data::distribute(samples,
///   tnt::data::DistributeOptions().micro_batch_size(16));
class DistributeOptions {
 public:
  DistributeOptions& rank(int r) {
    rank_ = r;
    return *this;
  }
  DistributeOptions& size(int n) {
    size_ = n;
    return *this;
  }
  /// Distribute over the ranks of `group` (e.g. a process set made with
  /// tnt::world().subgroup({...})): rank and size are the group's.
  DistributeOptions& group(comm::ProcessGroup g) {
    group_ = std::move(g);
    return *this;
  }
  /// The per-rank batch size m. For an unbatched dataset the global batch is
  /// m * N (the last one may be short); for a batched one, m * N must equal
  /// its batch size.
  DistributeOptions& micro_batch_size(std::int64_t m) {
    micro_batch_size_ = m;
    return *this;
  }
  /// Split global batches into runs of g samples (chunks) and give each
  /// rank whole chunks: the micro-batch rule applied to the chunk count
  /// (see micro_batch_range). Deterministic training uses it so that each
  /// chunk is computed whole on one rank. Default 1: the sample-level rule.
  DistributeOptions& granularity(std::int64_t g) {
    granularity_ = g;
    return *this;
  }
  /// false: no split; each rank uses its batches as they are (shard the data
  /// yourself, e.g. shard(get_size(), get_rank())) and global_size is the
  /// local batch size.
  DistributeOptions& enabled(bool on) {
    enabled_ = on;
    return *this;
  }
  /// For training on a GPU: each micro-batch is collated straight into
  /// page-locked host memory on a thread that reads two ahead: one host copy,
  /// off the training thread (samples already on a GPU: collated there).
  /// What steps after the batch make (a map's new tensors, a cache's, a
  /// strided view) is pinned on that thread too, as is every batch with
  /// distribution off (enabled(false)). Needs a CUDA build of
  /// LibTorch with a GPU; fit(), evaluate() and predict() set it when the
  /// model is on a GPU.
  DistributeOptions& pin_memory(bool on) {
    pin_memory_ = on;
    return *this;
  }
  /// The GPU the pinned batches go to (as DataLoader's pin_memory_device):
  /// the thread that collates them makes it its current device, so that a
  /// rank whose GPU is not cuda:0 makes no CUDA context on GPU 0. fit(),
  /// evaluate() and predict() set it to the model's device.
  DistributeOptions& pin_memory_device(torch::Device device) {
    pin_memory_device_ = device;
    return *this;
  }

  const comm::ProcessGroup& group() const { return group_; }
  const std::optional<int>& rank() const { return rank_; }
  const std::optional<int>& size() const { return size_; }
  const std::optional<std::int64_t>& micro_batch_size() const { return micro_batch_size_; }
  std::int64_t granularity() const { return granularity_; }
  bool enabled() const { return enabled_; }
  bool pin_memory() const { return pin_memory_; }
  const std::optional<torch::Device>& pin_memory_device() const { return pin_memory_device_; }

 private:
  comm::ProcessGroup group_;
  std::optional<int> rank_;
  std::optional<int> size_;
  std::optional<std::int64_t> micro_batch_size_;
  std::int64_t granularity_ = 1;
  bool enabled_ = true;
  bool pin_memory_ = false;
  std::optional<torch::Device> pin_memory_device_;
};

/// A dataset rewritten to produce one rank's micro-batches.
///
/// Example:
///   tnt::data::DistributedDataset dist(train, tnt::data::DistributeOptions());
///   for (std::int64_t epoch = 0; epoch < 5; ++epoch) {
///     auto it = dist.iterate(epoch);
///     while (auto mb = it.next()) train_step(*mb);
///   }
class DistributedDataset {
 public:
  /// This rank's pass over the micro-batches. Move-only.
  ///
  /// Example:
  ///   auto it = dist.iterate(0);
  ///   while (auto mb = it.next()) std::cout << mb->local_size << "/" << mb->global_size;
  class Iterator {
   public:
    /// Reads `stream`, the pipeline split for this rank (or, with `split`
    /// false, not split).
    Iterator(std::unique_ptr<detail::Stream> stream, bool split);
    Iterator(Iterator&&) noexcept;
    Iterator& operator=(Iterator&&) noexcept;
    ~Iterator();
    /// The next micro-batch, or nullopt after the last step.
    std::optional<MicroBatch> next();
    /// Passes over the next `n` global batches without reading their samples
    /// where the pipeline allows (see Dataset::Iterator::skip); the next
    /// micro-batch's `step` counts them. Returns how many were passed. Every
    /// rank must skip the same number (the batches are global).
    ///
    /// Example: auto it = dist.iterate(epoch); it.skip(done);   // resume mid-epoch
    std::int64_t skip(std::int64_t n);

   private:
    std::unique_ptr<detail::Stream> stream_;
    bool split_;
    std::int64_t step_ = 0;
    std::optional<Element> empty_;  // the shapes of an empty micro-batch
  };

  /// Checks and rewrites `dataset` (errors name B, N and the fix).
  DistributedDataset(const Dataset& dataset, DistributeOptions options);

  /// This rank's pass for `epoch` (the same shuffle order on every rank).
  Iterator iterate(std::int64_t epoch) const;
  /// Steps per pass, or kUnknownCardinality / kInfiniteCardinality.
  std::int64_t cardinality() const;
  /// B; without distribution, the local batch size (kUnknownCardinality if
  /// the dataset is not batched).
  std::int64_t global_batch_size() const;
  int rank() const { return rank_; }
  int size() const { return size_; }
  /// Whether bad samples may be dropped (see Dataset::may_skip_samples):
  /// then a micro-batch's global_size is nominal, and the real one is the
  /// sum of local_size over the ranks.
  bool may_skip_samples() const { return pipeline_.may_skip_samples(); }
  /// This rank's pipeline, e.g.
  /// "tensor_slices(60000) -> shuffle(60000) -> micro_batch(16)[rank 1 of 4]".
  std::string describe() const { return pipeline_.describe(); }

 private:
  Dataset pipeline_;
  bool split_ = true;
  int rank_ = 0;
  int size_ = 1;
  std::int64_t global_batch_size_ = kUnknownCardinality;
};

/// DistributedDataset(dataset, options).
///
/// Example:
///   auto dist = tnt::data::distribute(train);   // rank and size from the runtime
DistributedDataset distribute(const Dataset& dataset,
                              DistributeOptions options = DistributeOptions());

/// The micro-batch rule: the [begin, end) sample range of `rank` in a batch of
/// `batch` samples split over `size` ranks. With a granularity g > 1 the
/// batch is cut into ceil(batch / g) chunks of g samples (the last one may
/// be shorter) and the rule gives each rank a run of whole chunks.
///
/// Example:
///   auto [lo, hi] = tnt::data::micro_batch_range(10, 4, 1);      // {3, 6}
///   auto [a, b] = tnt::data::micro_batch_range(10, 4, 1, 3);     // chunks {1}: {3, 6}
std::pair<std::int64_t, std::int64_t> micro_batch_range(std::int64_t batch, int size, int rank,
                                                        std::int64_t granularity = 1);

}  // namespace tnt::data
