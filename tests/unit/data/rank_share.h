// The expected per-rank sample count of one pass, shared by the unit and the
// multi-rank distribution tests.
#pragma once

#include <algorithm>
#include <cstdint>

#include <tarantella/data/distribute.h>

namespace tnt_test {

/// Samples rank `rank` of `size` gets in one pass over `samples` samples
/// batched by `batch` (drop_remainder false): the sum of its micro-batches.
inline std::int64_t rank_share(std::int64_t samples, std::int64_t batch, int size, int rank) {
  std::int64_t total = 0;
  for (std::int64_t first = 0; first < samples; first += batch) {
    const auto [lo, hi] =
        tnt::data::micro_batch_range(std::min(batch, samples - first), size, rank);
    total += hi - lo;
  }
  return total;
}

}  // namespace tnt_test
