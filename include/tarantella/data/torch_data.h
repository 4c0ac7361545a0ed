// A bridge from torch::data: a user's torch::data dataset, with its
// transforms (Normalize, Stack, their own), keeps its code; only the loader
// line changes. tnt::data::make_data_loader(dataset, B) is a drop-in for
// torch::data::make_data_loader(dataset, B) that gives each rank its share of
// every GLOBAL batch of B samples with our semantics:
//   * the same order on every rank: shuffled, as LibTorch's default
//     RandomSampler, with a seed shared by the ranks and a new order each
//     epoch; or sequential (SequentialSampler, or shuffle(false));
//   * the micro-batch rule: of a batch of L samples rank r gets L/N, one more
//     for the first L mod N ranks, as one contiguous run; the last batch may
//     be short (drop_last as in torch), and a rank with no sample gets an
//     empty batch (first dimension 0) so every rank runs the same steps;
//   * only this rank's samples are loaded and transformed (get_batch with
//     its indices), so input work per rank falls as 1/N.
// LibTorch's sampler template argument keeps its meaning: none (its
// default, RandomSampler) shuffles, SequentialSampler keeps the file order.
// Each range-for over the loader is one epoch. loader->share() tells a
// DistributedOptimizer this rank's share of the current batch. For
// tnt::Model::fit instead, tnt::data::from_torch(dataset) makes the same
// dataset a tnt::data::Dataset source.
//
// Example (pytorch/examples' cpp/mnist, one changed line):
//   auto train = torch::data::datasets::MNIST(root)
//                    .map(torch::data::transforms::Normalize<>(0.1307, 0.3081))
//                    .map(torch::data::transforms::Stack<>());
//   auto loader = tnt::data::make_data_loader(std::move(train), 64);  // was torch::data::...
//   for (auto& batch : *loader) { ... batch.data, batch.target ... }
//   // was torch::data::make_data_loader<torch::data::samplers::SequentialSampler>(...):
//   tnt::data::make_data_loader<torch::data::samplers::SequentialSampler>(std::move(train), 64);
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <type_traits>
#include <vector>

#include <torch/data/example.h>
#include <torch/data/samplers/random.h>
#include <torch/data/samplers/sequential.h>
#include <torch/types.h>

#include <tarantella/base/error.h>
#include <tarantella/comm/process_group.h>
#include <tarantella/data/batch_share.h>
#include <tarantella/data/dataset.h>
#include <tarantella/data/distribute.h>
#include <tarantella/runtime/runtime.h>

namespace tnt::data {

/// Options of a distributed loader. The batch size is GLOBAL.
///
/// Example: tnt::data::DataLoaderOptions(64).shuffle(true).seed(42).drop_last(true)
class DataLoaderOptions {
 public:
  explicit DataLoaderOptions(std::int64_t batch_size) : batch_size_(batch_size) {}
  /// Shuffle the samples (the same permutation on every rank, a new one each
  /// epoch). Not set: as make_data_loader's sampler says (LibTorch's
  /// default, RandomSampler: shuffled).
  DataLoaderOptions& shuffle(bool v) { shuffle_ = v; return *this; }
  /// The shuffle's seed; default tnt::data::default_shuffle_seed() when each
  /// epoch starts (tnt::set_seed sets it), the same on every rank.
  DataLoaderOptions& seed(std::uint64_t v) { seed_ = v; return *this; }
  /// Drop a short last batch (torch's drop_last).
  DataLoaderOptions& drop_last(bool v) { drop_last_ = v; return *this; }
  /// Distribute over `group` (default: the world group, or one rank
  /// without a runtime).
  DataLoaderOptions& group(comm::ProcessGroup g) { group_ = std::move(g); return *this; }

  std::int64_t batch_size() const { return batch_size_; }
  /// True unless shuffle(false) (or a SequentialSampler) said otherwise.
  bool shuffle() const { return shuffle_.value_or(true); }
  bool shuffle_set() const { return shuffle_.has_value(); }
  std::uint64_t seed() const { return seed_.value_or(default_shuffle_seed()); }
  bool drop_last() const { return drop_last_; }
  const comm::ProcessGroup& group() const { return group_; }

 private:
  std::int64_t batch_size_;
  std::optional<bool> shuffle_;
  std::optional<std::uint64_t> seed_;
  bool drop_last_ = false;
  comm::ProcessGroup group_;
};

namespace detail {
/// This rank's index permutation for `epoch` (shared by every rank).
std::vector<std::int64_t> loader_order(std::int64_t size, bool shuffle, std::uint64_t seed,
                                       std::int64_t epoch);

template <typename>
inline constexpr bool always_false = false;

/// Sample `index` of a torch::data dataset as an Element {data, target}:
/// through get_batch({index}), whose result is either stacked (Stack<>)
/// or a vector of examples.
template <typename TorchDataset>
Element torch_sample(TorchDataset& dataset, std::int64_t index) {
  auto batch = dataset.get_batch(std::vector<std::size_t>{static_cast<std::size_t>(index)});
  using Batch = decltype(batch);
  if constexpr (std::is_same_v<Batch, torch::data::Example<>>) {
    return {batch.data[0], batch.target[0]};
  } else if constexpr (std::is_same_v<Batch, std::vector<torch::data::Example<>>>) {
    return {batch.at(0).data, batch.at(0).target};
  } else {
    static_assert(always_false<Batch>,
                  "tnt::data::from_torch needs a dataset of torch::data::Example<> (data and "
                  "target tensors), stacked or not");
  }
}
}  // namespace detail

/// A torch::data dataset (with its transforms) as a tnt::data::Dataset
/// source, for tnt::Model::fit: batch it with the GLOBAL batch size, and
/// distribution asks each rank's samples only (get_batch of one index at a
/// time, transforms included), so per-sample work per rank falls as 1/N.
///
/// Example:
///   auto train = tnt::data::from_torch(torch::data::datasets::MNIST(root)
///                    .map(torch::data::transforms::Normalize<>(0.1307, 0.3081))
///                    .map(torch::data::transforms::Stack<>()))
///                    .batch(64);
///   model.fit(train);
template <typename TorchDataset>
Dataset from_torch(TorchDataset dataset) {
  const auto size = dataset.size();
  TNT_CHECK(size.has_value(), "tnt::data::from_torch needs a dataset with a known size");
  auto shared = std::make_shared<TorchDataset>(std::move(dataset));
  return Dataset::from_generator(
      [shared](std::int64_t i) { return detail::torch_sample(*shared, i); },
      static_cast<std::int64_t>(*size));
}

/// One rank's view of a torch::data dataset, batch by batch.
template <typename TorchDataset>
class DistributedDataLoader {
 public:
  using Batch = decltype(std::declval<TorchDataset&>().get_batch(std::vector<std::size_t>{}));

  DistributedDataLoader(TorchDataset dataset, DataLoaderOptions options)
      : dataset_(std::move(dataset)), options_(std::move(options)),
        share_(std::make_shared<BatchShare>()) {
    const auto size = dataset_.size();
    TNT_CHECK(size.has_value(), "tnt::data::make_data_loader needs a dataset with a known size");
    size_ = static_cast<std::int64_t>(*size);
    if (options_.group().valid()) {
      rank_ = options_.group().rank();
      ranks_ = options_.group().size();
      TNT_CHECK(options_.group().is_member(), "make_data_loader: this rank is not a member of the ",
                options_.group().describe(), ": load only on the ranks of its group");
    } else if (is_initialized()) {
      rank_ = get_rank();
      ranks_ = get_size();
    }
    TNT_CHECK(options_.batch_size() >= ranks_, "make_data_loader: global batch size ",
              options_.batch_size(), " is smaller than the number of ranks ", ranks_,
              ": use a batch size of at least ", ranks_, " or fewer ranks");
  }

  /// Batches per epoch (the same on every rank).
  std::int64_t size() const {
    const std::int64_t b = options_.batch_size();
    return options_.drop_last() ? size_ / b : (size_ + b - 1) / b;
  }
  /// This rank's share of the batch last handed out (for DistributedOptimizer).
  std::shared_ptr<const BatchShare> share() const { return share_; }
  int rank() const { return rank_; }
  int ranks() const { return ranks_; }

  class Iterator {
   public:
    Iterator(DistributedDataLoader* loader, std::int64_t step) : loader_(loader), step_(step) {
      if (loader_ && step_ < loader_->size()) batch_ = loader_->load(step_);
    }
    Batch& operator*() { return *batch_; }
    Batch* operator->() { return &*batch_; }
    Iterator& operator++() {
      ++step_;
      batch_.reset();
      if (step_ < loader_->size()) batch_ = loader_->load(step_);
      return *this;
    }
    bool operator==(const Iterator& o) const { return step_ == o.step_; }
    bool operator!=(const Iterator& o) const { return step_ != o.step_; }

   private:
    DistributedDataLoader* loader_;
    std::int64_t step_;
    std::optional<Batch> batch_;
  };

  /// Starts a new epoch (a new permutation when shuffling).
  Iterator begin() {
    order_ = detail::loader_order(size_, options_.shuffle(), options_.seed(), epoch_++);
    return Iterator(this, 0);
  }
  Iterator end() { return Iterator(nullptr, size()); }

 private:
  Batch load(std::int64_t step) {
    const std::int64_t b = options_.batch_size();
    const std::int64_t first = step * b;
    const std::int64_t global = std::min(b, size_ - first);
    const auto [lo, hi] = micro_batch_range(global, ranks_, rank_);
    share_->set(hi - lo, global);
    std::vector<std::size_t> indices;
    for (std::int64_t i = lo; i < hi; ++i) {
      indices.push_back(static_cast<std::size_t>(order_[static_cast<std::size_t>(first + i)]));
    }
    if (!indices.empty()) return dataset_.get_batch(indices);
    // No sample for this rank: an empty batch with the right trailing shape.
    Batch one = dataset_.get_batch(
        std::vector<std::size_t>{static_cast<std::size_t>(order_[static_cast<std::size_t>(first)])});
    if constexpr (std::is_same_v<Batch, torch::data::Example<>>) {
      one.data = one.data.narrow(0, 0, 0);
      one.target = one.target.narrow(0, 0, 0);
      return one;
    } else {
      TNT_CHECK(false, "make_data_loader: rank ", rank_, " has no sample in batch ", step,
                " of ", global, " samples, and this dataset's batches are not stacked "
                "torch::data::Example<>: map it with torch::data::transforms::Stack<>(), or use a "
                "batch size that leaves every rank a sample");
      return one;
    }
  }

  TorchDataset dataset_;
  DataLoaderOptions options_;
  std::shared_ptr<BatchShare> share_;
  std::int64_t size_ = 0;
  int rank_ = 0;
  int ranks_ = 1;
  std::int64_t epoch_ = 0;
  std::vector<std::int64_t> order_;
};

namespace detail {
/// LibTorch's sampler as our order: RandomSampler (its default) shuffles,
/// SequentialSampler does not; the others choose samples per process,
/// which the loader does itself.
template <typename Sampler>
DataLoaderOptions with_sampler(DataLoaderOptions options) {
  constexpr bool random = std::is_same_v<Sampler, torch::data::samplers::RandomSampler>;
  static_assert(random || std::is_same_v<Sampler, torch::data::samplers::SequentialSampler>,
                "tnt::data::make_data_loader takes RandomSampler (LibTorch's default) or "
                "SequentialSampler: it gives each rank its share of every global batch itself, "
                "so a distributed or stream sampler has no place here");
  if (!options.shuffle_set()) options.shuffle(random);
  return options;
}
}  // namespace detail

/// Drop-in for torch::data::make_data_loader<Sampler>(dataset, batch_size):
/// batch_size is the GLOBAL batch; each rank gets its share of every batch.
/// Sampler as LibTorch's: RandomSampler (the default) shuffles,
/// SequentialSampler keeps the order.
template <typename Sampler = torch::data::samplers::RandomSampler, typename TorchDataset>
std::unique_ptr<DistributedDataLoader<TorchDataset>> make_data_loader(TorchDataset dataset,
                                                                      std::int64_t batch_size) {
  return std::make_unique<DistributedDataLoader<TorchDataset>>(
      std::move(dataset), detail::with_sampler<Sampler>(DataLoaderOptions(batch_size)));
}

/// The same with options (shuffle, seed, drop_last, group); shuffle(...)
/// given wins over the sampler.
template <typename Sampler = torch::data::samplers::RandomSampler, typename TorchDataset>
std::unique_ptr<DistributedDataLoader<TorchDataset>> make_data_loader(TorchDataset dataset,
                                                                      DataLoaderOptions options) {
  return std::make_unique<DistributedDataLoader<TorchDataset>>(
      std::move(dataset), detail::with_sampler<Sampler>(std::move(options)));
}

}  // namespace tnt::data
