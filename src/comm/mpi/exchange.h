// Private: tarantella's own payload exchange, which the MPI backend runs
// instead of a blocking MPI collective for allreduce, reduce_scatter and
// allgather(v) in groups whose size is a power of two (where the handshake
// carries payloads: Handshake::carries_payloads).
//
// Why not MPI's collective: a blocking MPI_Allreduce spins without ever
// yielding while a peer's engine thread waits for a core (2 ranks on 2
// cores, each with a training thread). Here the payload moves as
// MPI_Isend/MPI_Irecv between partners, waited on with the engine's policy
// (poll.h), in pieces of kMaxExchangedBytes.
//
// One algorithm per file, as in gloo:
//  * exchange_allreduce.cpp: recursive doubling of whole buffers for small
//    pieces, recursive halving and doubling (Rabenseifner) above;
//  * exchange_reduce_scatter.cpp: the halving half of that exchange;
//  * exchange_allgather.cpp: the doubling half;
//  * exchange_pieces.{h,cpp}: the point-to-point rounds all three are made
//    of.
// Each element's result is computed as (lower rank's) op (higher rank's) at
// every level, so all ranks end bitwise equal.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "comm/check/payload_watchdog.h"

namespace tnt::comm {

/// exchange_allreduce's piece. One halving-doubling exchange of a whole
/// 4 MiB piece measured 0.72-0.82x of MPI_Allreduce's pipelined
/// algorithm; the same 4 MiB as four 1 MiB pieces 0.96-0.98x (they stay
/// in cache), 16 MiB 0.98-1.00x, 64 MiB 2.3x (MPI's one call per 4 MiB
/// falls out of cache there too). Reduce-scatter and allgather send their
/// rounds in messages of this size (exchange_pieces).
constexpr std::size_t kMaxExchangedBytes = 1 << 20;

/// What an exchange is given by its backend, as gloo's algorithms are given
/// a Context: the communicator, this rank's place, scratch buffers that
/// outlive one call (grown, never shrunk) and the payload watchdog.
struct ExchangeContext {
  MPI_Comm comm;  ///< the payload communicator; nothing else goes point to point on it
  int rank;
  int size;                     ///< a power of two
  bool spans_hosts;             ///< some peers are on another host: round trips cost more
  std::vector<char>& incoming;  ///< a partner's data on the way in
  std::vector<char>& reduced;   ///< exchange_reduce_scatter's partial sums
  PayloadWatchdog& watchdog;    ///< re-armed by every piece that arrives
  std::int64_t seq;             ///< the collective's number, for the watchdog
};

/// The payload of an allreduce piece of `count` elements of `elem` bytes
/// in place: afterwards `data` holds the same bits on every rank.
void exchange_allreduce(const ExchangeContext& ctx, char* data, int count, std::size_t elem,
                        MPI_Datatype type, MPI_Op op);

/// Reduces `in` (left as it is), in which rank r's block has `counts[r]`
/// elements, and writes this rank's reduced block to `out`. Each element
/// is reduced by one rank only, the sum tree being exchange_allreduce's.
void exchange_reduce_scatter(const ExchangeContext& ctx, const char* in,
                             const std::vector<int>& counts, std::size_t elem, MPI_Datatype type,
                             MPI_Op op, char* out);

/// Fills `out` with every rank's block, rank r's of `counts[r]` elements,
/// side by side; this rank's comes from `mine`. `kind` names the
/// collective for the watchdog ("allgather", "allgatherv").
void exchange_allgather(const ExchangeContext& ctx, const char* mine,
                        const std::vector<int>& counts, std::size_t elem, char* out,
                        const char* kind);

}  // namespace tnt::comm
