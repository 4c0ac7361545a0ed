// distribute(): checks a pipeline against the rank count and rewrites it
// into one rank's micro-batches (the design is at the top of distribute.h).
#include <tarantella/data/distribute.h>

#include <tuple>

#include <torch/types.h>

#include <tarantella/base/argument_error.h>
#include <tarantella/runtime/runtime.h>

#include "data/pipeline/batcher.h"
#include "data/pipeline/element_ops.h"
#include "data/pipeline/nodes.h"

namespace tnt::data {

using detail::Batching;

DistributedDataset::Iterator::Iterator(std::unique_ptr<detail::Stream> stream, bool split)
    : stream_(std::move(stream)), split_(split) {}
DistributedDataset::Iterator::Iterator(Iterator&&) noexcept = default;
DistributedDataset::Iterator& DistributedDataset::Iterator::operator=(Iterator&&) noexcept =
    default;
DistributedDataset::Iterator::~Iterator() = default;

std::optional<MicroBatch> DistributedDataset::Iterator::next() {
  TNT_CHECK(stream_, "this iterator was moved from: use the iterator it was moved into");
  auto e = stream_->next();
  if (!e) return std::nullopt;
  MicroBatch mb;
  mb.step = step_++;
  mb.global_size = stream_->global_size();
  TNT_CHECK(!split_ || mb.global_size >= 0,
            "internal error: a micro-batch came without its global batch size");
  mb.tensors = std::move(*e);
  if (detail::is_dropped(mb.tensors)) {
    // Every sample of this batch (or micro-batch) was dropped as bad: no
    // rows, shaped like the last batch once there was one.
    if (empty_) mb.tensors = *empty_;
  } else {
    mb.local_size = detail::row_count(mb.tensors, "distributed dataset");
    if (!empty_) empty_ = detail::empty_rows(mb.tensors);
  }
  if (!split_) mb.global_size = mb.local_size;
  return mb;
}

std::int64_t DistributedDataset::Iterator::skip(std::int64_t n) {
  TNT_CHECK(stream_, "this iterator was moved from: use the iterator it was moved into");
  TNT_CHECK(n >= 0, "skip: count ", n,
            " is negative: give the number of global batches to pass over");
  const std::int64_t done = stream_->skip(n);
  step_ += done;
  return done;
}

namespace {

// Rank and size: given explicitly, else the group's, else the world's (the
// public API's default), else a single process.
std::pair<int, int> resolve(const DistributeOptions& options) {
  comm::ProcessGroup group = options.group();
  if (!group.valid() && tnt::is_initialized()) group = tnt::world();
  if (group.valid()) {
    TNT_CHECK(group.is_member(), "distribute: this rank is not a member of the ", group.describe(),
              ": distribute a dataset only on the ranks of its group");
  }
  const int rank = options.rank().value_or(group.valid() ? group.rank() : 0);
  const int size = options.size().value_or(group.valid() ? group.size() : 1);
  return {rank, size};
}

// pin_memory(): micro-batches read ahead into page-locked memory.
constexpr std::int64_t kPinnedAhead = 2;

}  // namespace

DistributedDataset::DistributedDataset(const Dataset& dataset, DistributeOptions options)
    : pipeline_(dataset), split_(options.enabled()) {
  std::tie(rank_, size_) = resolve(options);
  TNT_CHECK(size_ >= 1, "distribute: size ", size_, " is invalid: use the number of ranks (>= 1)");
  TNT_CHECK(rank_ >= 0 && rank_ < size_, "distribute: rank ", rank_, " is not in 0..", size_ - 1,
            ": use a rank below the size");
  const auto m = options.micro_batch_size();
  TNT_CHECK_ARG(!m || *m >= 1, "distribute: micro_batch_size ", m.value_or(0),
            " is invalid: use at least 1");
  detail::NodePtr node = dataset.node();
  const Batching batching = node->batching();

  if (!split_) {
    if (batching.kind == Batching::Kind::Samples && m) {
      node = detail::make_batch(node, detail::make_stacking_batcher(*m, false));
      pipeline_ = Dataset(node);
      global_batch_size_ = *m;
    } else if (batching.kind != Batching::Kind::Samples) {
      global_batch_size_ = batching.batch_size;
    }
    // Not split, but read ahead and pinned all the same (pin_memory): off
    // the training thread, as a split pipeline's.
    if (options.pin_memory()) {
      pipeline_ = Dataset(detail::make_prefetch(pipeline_.node(), kPinnedAhead,
                                                {true, options.pin_memory_device()}));
    }
    return;
  }

  TNT_CHECK(batching.kind != Batching::Kind::Blocked, "distribute: the pipeline has ",
            batching.blocker,
            ", which cannot be split into per-rank micro-batches: move it before batch, or switch ",
            "distribution off with DistributeOptions().enabled(false) and shard the data yourself");
  if (batching.kind == Batching::Kind::Samples) {
    TNT_CHECK(m.has_value(),
              "distribute: the dataset is not batched: call .batch(global_batch_size) ",
              "on it, or give DistributeOptions().micro_batch_size(m) for a global batch of m * ",
              size_, " ranks");
    global_batch_size_ = *m * size_;
    node = detail::make_batch(node, detail::make_stacking_batcher(global_batch_size_, false));
  } else {
    global_batch_size_ = batching.batch_size;
    TNT_CHECK_ARG(!m || *m * size_ == global_batch_size_, "distribute: micro_batch_size ",
                  m.value_or(0), " is inconsistent with the dataset's global batch size ",
                  global_batch_size_, " at ", size_, " ranks (", m.value_or(0), " x ", size_,
                  " = ", m.value_or(0) * size_,
                  "): remove micro_batch_size (Python: tnt_micro_batch_size), or make the global "
                  "batch size ", m.value_or(0) * size_, " (batch the dataset with it; Python: "
                  "batch_size=", m.value_or(0) * size_, ")");
  }
  TNT_CHECK(global_batch_size_ >= size_, "distribute: global batch size ", global_batch_size_,
            " is smaller than the number of ranks ", size_, ": use a batch size of at least ",
            size_, " or fewer ranks");
  TNT_CHECK_ARG(options.granularity() >= 1, "distribute: granularity ", options.granularity(),
            " is invalid: use at least 1 (samples per chunk)");
  detail::SplitSpec spec{rank_, size_, options.granularity(), nullptr, {}};
  if (options.pin_memory()) {
    spec.collate_into = detail::pinned_or_in_place;
    spec.pin = {true, options.pin_memory_device()};
  }
  pipeline_ = Dataset(node->split(spec));
  // The collation (and whatever lies above it) on a thread of its own.
  if (options.pin_memory()) {
    pipeline_ = Dataset(detail::make_prefetch(pipeline_.node(), kPinnedAhead,
                                              {true, options.pin_memory_device()}));
  }
}

DistributedDataset::Iterator DistributedDataset::iterate(std::int64_t epoch) const {
  TNT_CHECK(epoch >= 0, "iterate: epoch ", epoch, " is invalid: epochs count from 0");
  // Dropped batches are handed out too, so that every rank runs every step.
  return Iterator(pipeline_.node()->stream(detail::epoch_key(epoch)), split_);
}

std::int64_t DistributedDataset::cardinality() const { return pipeline_.cardinality(); }

std::int64_t DistributedDataset::global_batch_size() const { return global_batch_size_; }

std::pair<std::int64_t, std::int64_t> micro_batch_range(std::int64_t batch, int size, int rank,
                                                        std::int64_t granularity) {
  return detail::share_range(batch, size, rank, granularity);
}

DistributedDataset distribute(const Dataset& dataset, DistributeOptions options) {
  return DistributedDataset(dataset, std::move(options));
}

}  // namespace tnt::data
