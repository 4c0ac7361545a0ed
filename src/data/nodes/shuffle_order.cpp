#include "data/nodes/shuffle_order.h"

#include <optional>

namespace tnt::data::detail {

std::uint64_t ShuffleRng::next() {
  std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

std::uint64_t ShuffleRng::below(std::uint64_t bound) {
  // Lemire's multiply-shift with rejection of the biased low products.
  __uint128_t m = static_cast<__uint128_t>(next()) * bound;
  auto low = static_cast<std::uint64_t>(m);
  if (low < bound) {
    const std::uint64_t threshold = (0 - bound) % bound;
    while (low < threshold) {
      m = static_cast<__uint128_t>(next()) * bound;
      low = static_cast<std::uint64_t>(m);
    }
  }
  return static_cast<std::uint64_t>(m >> 64);
}

std::vector<std::int64_t> shuffle_order(std::int64_t n, std::int64_t capacity, std::uint64_t seed) {
  std::vector<std::int64_t> order;
  order.reserve(static_cast<std::size_t>(n));
  ShuffleBuffer<std::int64_t> buffer(capacity, seed);
  std::int64_t next_input = 0;
  while (!buffer.full() && next_input < n) buffer.add(next_input++);
  auto refill = [&]() -> std::optional<std::int64_t> {
    if (next_input < n) return next_input++;
    return std::nullopt;
  };
  while (!buffer.empty()) order.push_back(buffer.draw(refill));
  return order;
}

}  // namespace tnt::data::detail
