// The payload of an allreduce piece in a power-of-two group (exchange.h):
// at most kMaxExchangedBytes, reduced in place by point-to-point rounds
// between partners rank ^ step.
//
// Small pieces go by recursive doubling: in each of log2 N rounds a rank
// swaps its whole buffer with its partner and both compute
// (lower rank's) op (higher rank's), so all ranks end bitwise equal. Up to
// kMaxDoubledBytes (kMaxDoubledBytesHosts when the group spans hosts) one
// round trip per round beats the extra rounds below.
//
// Larger pieces go by recursive halving, then doubling (Rabenseifner):
// partners rank ^ N/2 first, each halving round halves the range a rank
// reduces (it keeps one half and hands the other to its partner), so every
// element is reduced by one rank; the doubling rounds, in reverse order,
// send the reduced ranges back out. A rank sends about 2 (N-1)/N of the
// buffer in all, as a ring. reduce_scatter and allgather are these two
// halves on their own (exchange_reduce_scatter.cpp, exchange_allgather.cpp).
#include <cstring>
#include <vector>

#include "comm/mpi/exchange.h"
#include "comm/mpi/exchange_pieces.h"
#include "comm/mpi_check.h"

namespace tnt::comm {
namespace {

/// Pieces up to this size go whole (one round trip per round); above, in
/// halves (bench/allreduce at 2 ranks on one host, whole buffers against
/// MPI_Allreduce: 1.04-1.07x at 64 KiB, 0.90x at 256 KiB, 0.89-0.92x at
/// 1 MiB, where MPI's tuned algorithm sends halves).
constexpr std::size_t kMaxDoubledBytes = 64 * 1024;
/// The same when the group spans hosts: halving at 256 KiB measured
/// 0.76-0.91x of MPI_Allreduce between two simulated 10 Gbit/s hosts (two
/// round trips where a whole buffer takes one).
constexpr std::size_t kMaxDoubledBytesHosts = 256 * 1024;

// mine := mine op theirs, with the lower rank's operand first. A sum is
// the same either way round bit for bit (IEEE addition is commutative;
// only a NaN's payload bits may differ), so it needs no copy.
struct Combine {
  int rank;
  std::size_t elem;
  MPI_Datatype type;
  MPI_Op op;
  char* theirs;  ///< where the partner's data arrives

  void operator()(char* mine, int n, int partner) const {
    if (rank < partner && op != MPI_SUM) {
      check_mpi(MPI_Reduce_local(mine, theirs, n, type, op), "MPI_Reduce_local");
      std::memcpy(mine, theirs, static_cast<std::size_t>(n) * elem);
    } else {
      check_mpi(MPI_Reduce_local(theirs, mine, n, type, op), "MPI_Reduce_local");
    }
  }
};

// Whole buffers, one exchange per round.
void recursive_doubling(const ExchangeContext& ctx, char* data, int count, std::size_t bytes,
                        const Combine& combine) {
  for (int step = 1; step < ctx.size; step *= 2) {
    const int partner = ctx.rank ^ step;
    exchange_with(ctx, partner, data, static_cast<int>(bytes), combine.theirs,
                  static_cast<int>(bytes));
    combine(data, count, partner);
  }
}

void halving_doubling(const ExchangeContext& ctx, char* data, int count, const Combine& combine) {
  const std::size_t elem = combine.elem;
  struct Range {
    int lo, hi;
  };
  std::vector<Range> kept;   // per halving round: the range kept
  std::vector<Range> given;  // ... and the one handed to the partner
  Range mine{0, count};
  for (int step = ctx.size / 2; step >= 1; step /= 2) {
    const int partner = ctx.rank ^ step;
    const int mid = mine.lo + (mine.hi - mine.lo) / 2;
    const bool low = (ctx.rank & step) == 0;
    const Range keep = low ? Range{mine.lo, mid} : Range{mid, mine.hi};
    const Range give = low ? Range{mid, mine.hi} : Range{mine.lo, mid};
    exchange_with(ctx, partner, data + give.lo * elem, (give.hi - give.lo) * static_cast<int>(elem),
                  combine.theirs, (keep.hi - keep.lo) * static_cast<int>(elem));
    combine(data + keep.lo * elem, keep.hi - keep.lo, partner);
    kept.push_back(keep);
    given.push_back(give);
    mine = keep;
  }
  for (int round = static_cast<int>(kept.size()) - 1, step = 1; round >= 0; --round, step *= 2) {
    const int partner = ctx.rank ^ step;
    const Range& keep = kept[round];
    const Range& give = given[round];
    exchange_with(ctx, partner, data + keep.lo * elem, (keep.hi - keep.lo) * static_cast<int>(elem),
                  data + give.lo * elem, (give.hi - give.lo) * static_cast<int>(elem));
  }
}

}  // namespace

void exchange_allreduce(const ExchangeContext& ctx, char* data, int count, std::size_t elem,
                        MPI_Datatype type, MPI_Op op) {
  const std::size_t bytes = static_cast<std::size_t>(count) * elem;
  if (ctx.incoming.size() < bytes) ctx.incoming.resize(bytes);
  const Combine combine{ctx.rank, elem, type, op, ctx.incoming.data()};
  // Between hosts a round trip costs tens of microseconds, so whole
  // buffers go further there.
  const std::size_t doubled = ctx.spans_hosts ? kMaxDoubledBytesHosts : kMaxDoubledBytes;
  if (bytes <= doubled || count < ctx.size) {
    recursive_doubling(ctx, data, count, bytes, combine);
  } else {
    halving_doubling(ctx, data, count, combine);
  }
}

}  // namespace tnt::comm
