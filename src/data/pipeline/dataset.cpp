// Dataset: the public face of the node chain. Each method validates its
// arguments and wraps the current node in a new one (nodes.h).
#include <tarantella/data/dataset.h>

#include <atomic>

#include <torch/torch.h>

#include <tarantella/data/idx.h>
#include <tarantella/base/error.h>

#include "data/pipeline/batcher.h"
#include "data/pipeline/element_ops.h"
#include "data/pipeline/nodes.h"

namespace tnt::data {

using detail::NodePtr;

Dataset::Iterator::Iterator(std::unique_ptr<detail::Stream> stream, bool keep_dropped)
    : stream_(std::move(stream)), keep_dropped_(keep_dropped) {}
Dataset::Iterator::Iterator(Iterator&&) noexcept = default;
Dataset::Iterator& Dataset::Iterator::operator=(Iterator&&) noexcept = default;
Dataset::Iterator::~Iterator() = default;

std::optional<Element> Dataset::Iterator::next() {
  TNT_CHECK(stream_, "this iterator was moved from: use the iterator it was moved into");
  std::optional<Element> e = stream_->next();
  while (!keep_dropped_ && e && detail::is_dropped(*e)) e = stream_->next();
  return e;
}

std::int64_t Dataset::Iterator::skip(std::int64_t n) {
  TNT_CHECK(stream_, "this iterator was moved from: use the iterator it was moved into");
  TNT_CHECK(n >= 0, "skip: count ", n, " is negative: give the number of elements to pass over");
  return stream_->skip(n);
}

Dataset::RangeIterator::RangeIterator(Iterator it) : it_(std::move(it)), current_(it_.next()) {}

Dataset::RangeIterator& Dataset::RangeIterator::operator++() {
  current_ = it_.next();
  return *this;
}

Dataset::Dataset(std::shared_ptr<const detail::Node> node)
    : node_(std::move(node)), next_epoch_(std::make_shared<std::atomic<std::int64_t>>(0)) {}

Dataset Dataset::from_tensor_slices(Element tensors) {
  return Dataset(detail::make_tensor_slices(std::move(tensors)));
}
Dataset Dataset::from_tensors(Element tensors) {
  return Dataset(detail::make_tensors(std::move(tensors)));
}
Dataset Dataset::range(std::int64_t start, std::int64_t stop, std::int64_t step) {
  return Dataset(detail::make_range(start, stop, step));
}
Dataset Dataset::range(std::int64_t stop) { return range(0, stop, 1); }
Dataset Dataset::from_generator(GeneratorFunction generator, std::int64_t size) {
  return Dataset(detail::make_generator(std::move(generator), size));
}

Dataset Dataset::from_idx(const std::vector<std::string>& paths) {
  TNT_CHECK(!paths.empty(), "from_idx: no files given: pass e.g. {images_path, labels_path}");
  Element tensors;
  for (const auto& path : paths) tensors.push_back(read_idx(path));
  for (std::size_t c = 1; c < tensors.size(); ++c) {
    TNT_CHECK(tensors[c].size(0) == tensors[0].size(0), "from_idx: ", paths[c], " has ",
              tensors[c].size(0), " items but ", paths[0], " has ", tensors[0].size(0),
              ": the files must describe the same samples");
  }
  return from_tensor_slices(std::move(tensors));
}

Dataset Dataset::from_csv(const std::string& path, const CsvOptions& options) {
  return from_tensor_slices(read_csv(path, options));
}

Dataset Dataset::zip(const std::vector<Dataset>& datasets) {
  std::vector<NodePtr> nodes;
  for (const auto& d : datasets) nodes.push_back(d.node_);
  return Dataset(detail::make_zip(std::move(nodes)));
}

Dataset Dataset::map(MapFunction fn, const MapOptions& options) const {
  return Dataset(detail::make_map(node_, std::move(fn), options));
}
Dataset Dataset::map_seeded(SeededMapFunction fn, std::optional<std::uint64_t> seed,
                            const MapOptions& options) const {
  return Dataset(detail::make_seeded_map(node_, std::move(fn), seed, options));
}
Dataset Dataset::filter(FilterPredicate predicate) const {
  return Dataset(detail::make_filter(node_, std::move(predicate)));
}
Dataset Dataset::shuffle(std::int64_t buffer_size, std::optional<std::uint64_t> seed,
                         bool reshuffle_each_iteration) const {
  return Dataset(detail::make_shuffle(node_, buffer_size, seed,
                                      reshuffle_each_iteration));
}
Dataset Dataset::batch(std::int64_t batch_size, bool drop_remainder) const {
  return Dataset(
      detail::make_batch(node_, detail::make_stacking_batcher(batch_size, drop_remainder)));
}
Dataset Dataset::padded_batch(std::int64_t batch_size, const PaddingOptions& options) const {
  return Dataset(detail::make_batch(node_, detail::make_padding_batcher(batch_size, options)));
}
Dataset Dataset::unbatch() const { return Dataset(detail::make_unbatch(node_)); }
Dataset Dataset::repeat(std::int64_t count) const {
  return Dataset(detail::make_repeat(node_, count));
}
Dataset Dataset::take(std::int64_t count) const { return Dataset(detail::make_take(node_, count)); }
Dataset Dataset::skip(std::int64_t count) const { return Dataset(detail::make_skip(node_, count)); }
Dataset Dataset::shard(std::int64_t num_shards, std::int64_t index) const {
  return Dataset(detail::make_shard(node_, num_shards, index));
}
Dataset Dataset::concatenate(const Dataset& other) const {
  return Dataset(detail::make_concatenate(node_, other.node_));
}
Dataset Dataset::enumerate(std::int64_t start) const {
  return Dataset(detail::make_enumerate(node_, start));
}
Dataset Dataset::cache() const { return Dataset(detail::make_cache(node_)); }
Dataset Dataset::prefetch(std::int64_t buffer_size) const {
  return Dataset(detail::make_prefetch(node_, buffer_size));
}

std::int64_t Dataset::cardinality() const { return node_->cardinality(); }

Dataset::Iterator Dataset::iterate(std::int64_t epoch) const {
  TNT_CHECK(epoch >= 0, "iterate: epoch ", epoch, " is invalid: epochs count from 0");
  // Elements without tensors are handed out as before unless they are
  // dropped samples.
  return Iterator(node_->stream(detail::epoch_key(epoch)),
                  /*keep_dropped=*/!detail::may_drop_samples(node_));
}

bool Dataset::may_skip_samples() const { return detail::may_drop_samples(node_); }

std::int64_t Dataset::samples_skipped() const { return detail::samples_dropped(node_); }

Dataset::RangeIterator Dataset::begin() const {
  return RangeIterator(iterate(next_epoch_->fetch_add(1)));
}

std::string Dataset::describe() const { return detail::describe(node_); }

}  // namespace tnt::data
