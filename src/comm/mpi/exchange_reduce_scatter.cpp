// The payload of a reduce_scatter in a power-of-two group (exchange.h): the
// halving half of exchange_allreduce's recursive halving and doubling.
//
// Rank r's block is elements [block_start[r], block_start[r + 1]) of the
// input. In the round of `step` (N/2 first, down to 1) a rank splits the
// blocks it still reduces, those of ranks [lo, hi), in two at mid: it keeps
// the half that holds its own block, sends the other half to its partner
// rank ^ step and reduces the partner's copy of its kept half into its
// own, as it arrives, piece by piece (exchange_pieces). After log2 N rounds
// it holds its own block, reduced over all ranks. Each element is reduced by
// one rank only, the sum tree being that of exchange_allreduce's halving
// (partners rank ^ N/2 first).
//
// Where the partner's part lands: in the first and the last round, where
// the result goes (the output in the last round, else reduced_), and this
// rank's own part is reduced into it there, so the input stays as it is and
// at 2 ranks nothing is allocated. In the rounds in between (8 ranks and
// more) it lands in incoming_ and is reduced into reduced_ in place.
//
// From 4 ranks the first round keeps N/2 blocks of partial sums, so large
// blocks go in slabs: slab k packs the k-th part (at most kMaxChunk / N
// elements) of every rank's block side by side (pack_parts), which bounds
// that buffer to kMaxChunk / 2 elements. The same partners and the same
// sums per element as one exchange of the whole.
#include <algorithm>
#include <cstddef>
#include <vector>

#include "comm/chunks.h"
#include "comm/mpi/exchange.h"
#include "comm/mpi/exchange_pieces.h"
#include "comm/mpi_check.h"

namespace tnt::comm {
namespace {

// Where one round's incoming part lands (`recv`), and what is reduced
// (`from`, in place) into what (`into`), at the same offsets.
struct Landing {
  char* recv;
  const char* from;
  char* into;
};

Landing landing(const ExchangeContext& ctx, bool first, bool last, const char* keep_src,
                std::int64_t keep_at, std::int64_t keep_bytes, char* out) {
  const auto need = static_cast<std::size_t>(keep_bytes);
  if (first || last) {
    if (!last && ctx.reduced.size() < need) ctx.reduced.resize(need);
    char* const target = last ? out : ctx.reduced.data();
    return {target, keep_src, target};
  }
  if (ctx.incoming.size() < need) ctx.incoming.resize(need);
  return {ctx.incoming.data(), ctx.incoming.data(), ctx.reduced.data() + keep_at};
}

// All rounds over one input in which rank r's block is
// [block_start[r], block_start[r + 1]); this rank's reduced block goes to
// `out`.
void halving_rounds(const ExchangeContext& ctx, const char* in,
                    const std::vector<std::int64_t>& block_start, std::size_t elem,
                    MPI_Datatype type, MPI_Op op, char* out) {
  const auto e = static_cast<std::int64_t>(elem);
  const std::int64_t total = block_start[static_cast<std::size_t>(ctx.size)];
  // Ranks [lo, hi) own the blocks this rank still reduces; their partial
  // results live in `mine` from element `base` on (first the input itself).
  int lo = 0;
  int hi = ctx.size;
  const char* mine = in;
  std::int64_t base = 0;
  for (int step = ctx.size / 2; step >= 1; step /= 2) {
    const int partner = ctx.rank ^ step;
    const int mid = lo + (hi - lo) / 2;
    const bool low = (ctx.rank & step) == 0;
    const int keep_lo = low ? lo : mid, keep_hi = low ? mid : hi;
    const int give_lo = low ? mid : lo, give_hi = low ? hi : mid;
    const std::int64_t keep0 = block_start[static_cast<std::size_t>(keep_lo)];
    const std::int64_t keep_n = block_start[static_cast<std::size_t>(keep_hi)] - keep0;
    const std::int64_t give0 = block_start[static_cast<std::size_t>(give_lo)];
    const std::int64_t give_n = block_start[static_cast<std::size_t>(give_hi)] - give0;
    const bool first = mine == in;
    const bool last = step == 1;  // what is kept is this rank's block
    const Landing at =
        landing(ctx, first, last, mine + (keep0 - base) * e, (keep0 - base) * e, keep_n * e, out);
    exchange_pieces(
        ctx, partner, mine + (give0 - base) * e, give_n * e, at.recv, keep_n * e,
        [&](std::int64_t offset, std::int64_t bytes) {
          check_mpi(MPI_Reduce_local(at.from + offset, at.into + offset,
                                     static_cast<int>(bytes / e), type, op),
                    "MPI_Reduce_local");
        },
        "reduce_scatter", total);
    if (first) base = keep0;  // reduced_ starts at the first kept half
    mine = ctx.reduced.data();
    lo = keep_lo;
    hi = keep_hi;
  }
}

}  // namespace

void exchange_reduce_scatter(const ExchangeContext& ctx, const char* in,
                             const std::vector<int>& counts, std::size_t elem, MPI_Datatype type,
                             MPI_Op op, char* out) {
  const std::vector<std::int64_t> block_start = block_starts(counts);
  const std::int64_t slab = std::max<std::int64_t>(1, kMaxChunk / ctx.size);
  const std::int64_t longest = *std::max_element(counts.begin(), counts.end());
  if (ctx.size == 2 || longest <= slab) {
    // Straight from the input: at 2 ranks the partner's half lands in the
    // output, so nothing else is allocated.
    halving_rounds(ctx, in, block_start, elem, type, op, out);
    return;
  }
  const auto e = static_cast<std::int64_t>(elem);
  std::vector<char> packed(static_cast<std::size_t>(slab * ctx.size * e));
  std::vector<std::int64_t> packed_start;
  for (std::int64_t done = 0; done < longest; done += slab) {
    pack_parts(in, block_start, done, slab, e, packed.data(), packed_start);
    const std::int64_t mine =
        std::min<std::int64_t>(done, counts[static_cast<std::size_t>(ctx.rank)]);
    halving_rounds(ctx, packed.data(), packed_start, elem, type, op, out + mine * e);
  }
}

}  // namespace tnt::comm
