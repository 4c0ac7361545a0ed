// The payload of an allgather(v) in a power-of-two group (exchange.h): the
// doubling half of exchange_allreduce's recursive halving and doubling,
// straight into the result.
//
// Rank r's block is elements [block_start[r], block_start[r + 1]) of the
// output; this rank's is copied in first. Before the round of `step`
// (1 first, up to N/2) a rank holds the blocks of the `step` ranks from
// rank & ~(step - 1) on, and its partner rank ^ step the next (or previous)
// `step`: they swap them, in pieces (exchange_pieces), each straight into
// its place. After log2 N rounds every rank holds every block.
#include <cstring>
#include <vector>

#include "comm/chunks.h"
#include "comm/mpi/exchange.h"
#include "comm/mpi/exchange_pieces.h"

namespace tnt::comm {

void exchange_allgather(const ExchangeContext& ctx, const char* mine,
                        const std::vector<int>& counts, std::size_t elem, char* out,
                        const char* kind) {
  const std::vector<std::int64_t> block_start = block_starts(counts);
  const auto e = static_cast<std::int64_t>(elem);
  const auto at = [&](int r) { return block_start[static_cast<std::size_t>(r)]; };
  std::memcpy(out + at(ctx.rank) * e, mine,
              static_cast<std::size_t>(counts[static_cast<std::size_t>(ctx.rank)]) * elem);
  const std::int64_t total = at(ctx.size);
  for (int step = 1; step < ctx.size; step *= 2) {
    const int partner = ctx.rank ^ step;
    const int mine_lo = ctx.rank & ~(step - 1);
    const int theirs_lo = partner & ~(step - 1);
    exchange_pieces(
        ctx, partner, out + at(mine_lo) * e, (at(mine_lo + step) - at(mine_lo)) * e,
        out + at(theirs_lo) * e, (at(theirs_lo + step) - at(theirs_lo)) * e,
        [](std::int64_t, std::int64_t) {}, kind, total);
  }
}

}  // namespace tnt::comm
