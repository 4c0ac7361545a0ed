// The shuffle algorithm, as in tf.data: a buffer of up to `capacity` items;
// each output is drawn uniformly from the buffer and its slot is refilled
// with the next input (or, once the input is exhausted, with the buffer's
// last item). capacity >= number of items gives a uniform permutation.
//
// The random numbers come from splitmix64 with an unbiased bounded draw
// (Lemire), fully specified here rather than by the standard library, so the
// order is the same pure function of the seed on every rank, compiler and
// platform.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace tnt::data::detail {

class ShuffleRng {
 public:
  explicit ShuffleRng(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next();
  /// Uniform in [0, bound), bound > 0.
  std::uint64_t below(std::uint64_t bound);

 private:
  std::uint64_t state_;
};

template <typename T>
class ShuffleBuffer {
 public:
  ShuffleBuffer(std::int64_t capacity, std::uint64_t seed) : capacity_(capacity), rng_(seed) {}
  bool full() const { return static_cast<std::int64_t>(items_.size()) >= capacity_; }
  bool empty() const { return items_.empty(); }
  void add(T item) { items_.push_back(std::move(item)); }
  /// Draws a random slot; `refill` (the next input, if any) takes its place.
  template <typename Refill>
  T draw(Refill&& refill) {
    const std::size_t j = static_cast<std::size_t>(rng_.below(items_.size()));
    T out = std::move(items_[j]);
    if (auto next = refill()) {
      items_[j] = std::move(*next);
    } else {
      if (j + 1 != items_.size()) items_[j] = std::move(items_.back());
      items_.pop_back();
    }
    return out;
  }

 private:
  std::int64_t capacity_;
  ShuffleRng rng_;
  std::vector<T> items_;
};

/// The order in which a shuffle with this buffer and seed emits positions
/// 0..n-1 of its input.
std::vector<std::int64_t> shuffle_order(std::int64_t n, std::int64_t capacity, std::uint64_t seed);

}  // namespace tnt::data::detail
