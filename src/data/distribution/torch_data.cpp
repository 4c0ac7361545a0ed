// The shared order of the torch::data bridge (see data/torch_data.h): a
// Fisher-Yates permutation from a 64-bit Mersenne Twister seeded with
// (seed, epoch), identical on every rank and every run.
#include <tarantella/data/torch_data.h>

#include <numeric>
#include <random>

namespace tnt::data::detail {

std::vector<std::int64_t> loader_order(std::int64_t size, bool shuffle, std::uint64_t seed,
                                       std::int64_t epoch) {
  std::vector<std::int64_t> order(static_cast<std::size_t>(size));
  std::iota(order.begin(), order.end(), 0);
  if (!shuffle) return order;
  std::mt19937_64 rng(seed ^ (0x9e3779b97f4a7c15ULL * static_cast<std::uint64_t>(epoch + 1)));
  for (std::size_t i = order.size(); i > 1; --i) {
    std::uniform_int_distribution<std::size_t> pick(0, i - 1);
    std::swap(order[i - 1], order[pick(rng)]);
  }
  return order;
}

}  // namespace tnt::data::detail
