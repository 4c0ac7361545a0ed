// How samples become one batch: stacked (batch) or padded to a common shape
// (padded_batch). The batch node and the micro-batch node (its split)
// share this, so a rank's micro-batch is assembled from the rows [lo, hi) of
// the serial batch exactly like a batch of those rows. For batch that is the
// rows of the serial batch; for padded_batch without fixed shapes the rows
// are padded to the longest sample of the MICRO-batch (see distribute.h).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <tarantella/data/padding_options.h>

#include "data/pipeline/node.h"

namespace tnt::data::detail {

class Batcher {
 public:
  Batcher(std::int64_t size, bool drop_remainder) : size_(size), drop_remainder_(drop_remainder) {}
  virtual ~Batcher() = default;

  std::int64_t size() const { return size_; }
  bool drop_remainder() const { return drop_remainder_; }
  /// "batch(64)", "padded_batch(64, drop_remainder)".
  virtual std::string name() const = 0;
  /// The batch of the samples `indices` (at least one) of a random-access
  /// input; collated into tensors that `into` allocates, if given.
  virtual Element from_indexed(Indexed& input, const std::vector<std::int64_t>& indices,
                               const CollateInto& into = nullptr) const = 0;
  /// The batch of computed samples (at least one).
  virtual Element from_samples(const std::vector<Element>& samples,
                               const CollateInto& into = nullptr) const = 0;

  /// Draws the samples of the next batch with `next()` (which returns
  /// std::optional<T>); nullopt when there is no batch: the input ended, or
  /// only a short batch is left and drop_remainder is set.
  template <typename T, typename Next>
  std::optional<std::vector<T>> draw(Next&& next) const {
    std::vector<T> items;
    while (static_cast<std::int64_t>(items.size()) < size_) {
      auto item = next();
      if (!item) break;
      items.push_back(std::move(*item));
    }
    const auto n = static_cast<std::int64_t>(items.size());
    if (n == 0 || (drop_remainder_ && n < size_)) return std::nullopt;
    return items;
  }

  /// Passes over up to `n` batches of `input`: their samples are drawn
  /// (to find where the next batch begins) but none is computed. Returns
  /// how many it passed.
  std::int64_t skip(Stream& input, std::int64_t n) const;

  /// Number of batches of an input with `n` elements (any cardinality).
  std::int64_t count(std::int64_t n) const;
  /// Samples in batch `k` of an input with `n` elements (n may be infinite).
  std::int64_t length(std::int64_t k, std::int64_t n) const;

 private:
  std::int64_t size_;
  bool drop_remainder_;
};

/// The indices first, first+1, ..., first+count-1.
std::vector<std::int64_t> batch_indices(std::int64_t first, std::int64_t count);

std::shared_ptr<const Batcher> make_stacking_batcher(std::int64_t size, bool drop_remainder);
std::shared_ptr<const Batcher> make_padding_batcher(std::int64_t size,
                                                    const PaddingOptions& options);

}  // namespace tnt::data::detail
