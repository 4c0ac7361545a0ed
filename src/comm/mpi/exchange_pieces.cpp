#include "comm/mpi/exchange_pieces.h"

#include <algorithm>
#include <cstddef>
#include <vector>

#include "comm/mpi_check.h"
#include "comm/poll.h"

namespace tnt::comm {
namespace {

constexpr int kExchangeTag = 201;  // the payload communicator carries nothing else point to point
constexpr int kPiecesTag = 202;    // in order on every rank: one tag does
constexpr auto kPiece = static_cast<std::int64_t>(kMaxExchangedBytes);

std::int64_t pieces(std::int64_t bytes) { return (bytes + kPiece - 1) / kPiece; }

// Posts the receives of a round's pieces first (`n_recv` requests), then its
// sends.
std::vector<MPI_Request> post_pieces(const ExchangeContext& ctx, int partner, const char* send,
                                     std::int64_t send_bytes, char* recv, std::int64_t recv_bytes) {
  const std::int64_t n_recv = pieces(recv_bytes);
  const std::int64_t n_send = pieces(send_bytes);
  std::vector<MPI_Request> reqs(static_cast<std::size_t>(n_recv + n_send), MPI_REQUEST_NULL);
  for (std::int64_t i = 0; i < n_recv; ++i) {
    const std::int64_t at = i * kPiece;
    check_mpi(MPI_Irecv(recv + at, static_cast<int>(std::min(kPiece, recv_bytes - at)), MPI_BYTE,
                        partner, kPiecesTag, ctx.comm, &reqs[static_cast<std::size_t>(i)]),
              "MPI_Irecv");
  }
  for (std::int64_t i = 0; i < n_send; ++i) {
    const std::int64_t at = i * kPiece;
    check_mpi(MPI_Isend(send + at, static_cast<int>(std::min(kPiece, send_bytes - at)), MPI_BYTE,
                        partner, kPiecesTag, ctx.comm, &reqs[static_cast<std::size_t>(n_recv + i)]),
              "MPI_Isend");
  }
  return reqs;
}

bool all_sent(std::vector<MPI_Request>& reqs, std::int64_t n_recv) {
  int all = 0;
  check_mpi(MPI_Testall(static_cast<int>(static_cast<std::int64_t>(reqs.size()) - n_recv),
                        reqs.data() + n_recv, &all, MPI_STATUSES_IGNORE),
            "MPI_Testall");
  return all != 0;
}

}  // namespace

void exchange_with(const ExchangeContext& ctx, int partner, const char* send, int send_bytes,
                   char* recv, int recv_bytes) {
  MPI_Request reqs[2];
  check_mpi(MPI_Irecv(recv, recv_bytes, MPI_BYTE, partner, kExchangeTag, ctx.comm, &reqs[0]),
            "MPI_Irecv (allreduce)");
  check_mpi(MPI_Isend(send, send_bytes, MPI_BYTE, partner, kExchangeTag, ctx.comm, &reqs[1]),
            "MPI_Isend (allreduce)");
  wait_on_peers(
      [&] {
        int all = 0;
        check_mpi(MPI_Testall(2, reqs, &all, MPI_STATUSES_IGNORE), "MPI_Testall (allreduce)");
        return all != 0;
      },
      PollClock::time_point::max(), PollClock::time_point::max(), [] {});
}

void exchange_pieces(const ExchangeContext& ctx, int partner, const char* send,
                     std::int64_t send_bytes, char* recv, std::int64_t recv_bytes,
                     const std::function<void(std::int64_t, std::int64_t)>& arrived,
                     const char* kind, std::int64_t elements) {
  std::vector<MPI_Request> reqs = post_pieces(ctx, partner, send, send_bytes, recv, recv_bytes);
  const std::int64_t n_recv = pieces(recv_bytes);
  std::int64_t next = 0;  // the first received piece not yet handed over
  const auto advance = [&] {
    bool moved = false;
    while (next < n_recv) {
      int done = 0;
      check_mpi(MPI_Test(&reqs[static_cast<std::size_t>(next)], &done, MPI_STATUS_IGNORE),
                "MPI_Test");
      if (done == 0) break;
      const std::int64_t at = next * kPiece;
      arrived(at, std::min(kPiece, recv_bytes - at));
      ctx.watchdog.arm(ctx.seq, kind, elements);  // progress: the clock starts again
      ++next;
      moved = true;
    }
    if (next < n_recv) return moved;
    return all_sent(reqs, n_recv) || moved;
  };
  for (;;) {
    wait_on_peers(advance, PollClock::time_point::max(), PollClock::time_point::max(), [] {});
    if (next == n_recv && all_sent(reqs, n_recv)) return;
  }
}

}  // namespace tnt::comm
