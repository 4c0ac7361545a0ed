#include "comm/chunks.h"

#include <algorithm>
#include <cstddef>
#include <cstring>

namespace tnt::comm {

std::vector<std::int64_t> block_starts(const std::vector<int>& counts) {
  std::vector<std::int64_t> start(counts.size() + 1, 0);
  for (std::size_t r = 0; r < counts.size(); ++r) start[r + 1] = start[r] + counts[r];
  return start;
}

void pack_parts(const char* in, const std::vector<std::int64_t>& block_start, std::int64_t done,
                std::int64_t part, std::int64_t elem, char* packed,
                std::vector<std::int64_t>& packed_start) {
  const std::size_t ranks = block_start.size() - 1;
  packed_start.resize(ranks + 1);
  packed_start[0] = 0;
  for (std::size_t r = 0; r < ranks; ++r) {
    const std::int64_t count = block_start[r + 1] - block_start[r];
    const std::int64_t n = std::clamp<std::int64_t>(count - done, 0, part);
    const std::int64_t at = packed_start[r];
    if (n > 0) {
      std::memcpy(packed + at * elem, in + (block_start[r] + done) * elem,
                  static_cast<std::size_t>(n * elem));
    }
    packed_start[r + 1] = at + n;
  }
}

}  // namespace tnt::comm
