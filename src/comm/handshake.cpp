#include "comm/handshake.h"

#include <chrono>
#include <thread>

#include <tarantella/base/error.h>

#include "comm/dtype.h"
#include "comm/mpi_check.h"

namespace tnt::comm {
namespace {

constexpr int kHelloTag = 101;
constexpr int kVerdictTag = 102;

using Clock = std::chrono::steady_clock;

// Polls `done` until it returns true or the deadline passes. Spins with
// yield for a few microseconds (the common case: peers are right there),
// then sleeps with a growing interval capped at 1 ms so a long wait costs
// no CPU.
template <typename Done>
bool poll_until(Done done, Clock::time_point deadline) {
  auto nap = std::chrono::microseconds(10);
  for (int spin = 0;; ++spin) {
    if (done()) return true;
    if (Clock::now() >= deadline) return false;
    if (spin < 200) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(nap);
      nap = std::min(nap * 2, std::chrono::microseconds(1000));
    }
  }
}

Clock::time_point deadline_after(double seconds) {
  return Clock::now() + std::chrono::duration_cast<Clock::duration>(
                            std::chrono::duration<double>(seconds));
}

}  // namespace

Handshake::Handshake(MPI_Comm control, int rank, int size, double timeout_seconds)
    : control_(control), rank_(rank), size_(size), timeout_seconds_(timeout_seconds) {}

std::vector<Descriptor> Handshake::agree(Descriptor mine) {
  TNT_CHECK(!broken_, "the communicator is unusable after an earlier collective timed out; the "
                      "job must be restarted");
  std::vector<Descriptor> table =
      size_ == 1 ? std::vector<Descriptor>{mine}
                 : (rank_ == 0 ? collect_as_master(mine) : await_verdict(mine));
  const std::string verdict = check_table(table);
  if (!verdict.empty()) {
    bool timed_out = false;
    for (const auto& d : table) timed_out = timed_out || !d.arrived;
    if (timed_out) {
      broken_ = true;
      throw TimeoutError(::tnt::detail::concat("[tarantella rank ", rank_, "] ", verdict));
    }
    throw MismatchError(::tnt::detail::concat("[tarantella rank ", rank_, "] ", verdict));
  }
  return table;
}

std::vector<Descriptor> Handshake::collect_as_master(const Descriptor& mine) {
  std::vector<Descriptor> table(size_);
  table[0] = mine;
  std::vector<MPI_Request> recvs(size_ - 1, MPI_REQUEST_NULL);
  for (int r = 1; r < size_; ++r) {
    check_mpi(MPI_Irecv(&table[r], sizeof(Descriptor), MPI_BYTE, r, kHelloTag, control_,
                        &recvs[r - 1]),
              "MPI_Irecv (handshake)");
  }
  const auto deadline = deadline_after(timeout_seconds_);
  poll_until(
      [&] {
        // Test each request on its own: MPI_Testall leaves completed
        // requests active while others are pending, and a completed one
        // must read as arrived if the deadline passes.
        bool all = true;
        for (MPI_Request& req : recvs) {
          if (req == MPI_REQUEST_NULL) continue;
          int done = 0;
          check_mpi(MPI_Test(&req, &done, MPI_STATUS_IGNORE), "MPI_Test (handshake)");
          all = all && done;
        }
        return all;
      },
      deadline);
  for (int r = 1; r < size_; ++r) {
    MPI_Request& req = recvs[r - 1];
    if (req == MPI_REQUEST_NULL) continue;  // completed
    MPI_Cancel(&req);
    MPI_Request_free(&req);
    table[r] = Descriptor{};
    table[r].arrived = 0;
    broken_ = true;
  }
  std::vector<MPI_Request> sends;
  for (int r = 1; r < size_; ++r) {
    if (!table[r].arrived) continue;
    sends.emplace_back();
    check_mpi(MPI_Isend(table.data(), static_cast<int>(sizeof(Descriptor) * size_), MPI_BYTE, r,
                        kVerdictTag, control_, &sends.back()),
              "MPI_Isend (handshake verdict)");
  }
  // Every receiver has its verdict receive posted already, so this completes.
  check_mpi(MPI_Waitall(static_cast<int>(sends.size()), sends.data(), MPI_STATUSES_IGNORE),
            "MPI_Waitall (handshake verdict)");
  return table;
}

std::vector<Descriptor> Handshake::await_verdict(const Descriptor& mine) {
  std::vector<Descriptor> table(size_);
  MPI_Request reqs[2];
  // Post the verdict receive before announcing ourselves, so the master's
  // send always finds it.
  check_mpi(MPI_Irecv(table.data(), static_cast<int>(sizeof(Descriptor) * size_), MPI_BYTE, 0,
                      kVerdictTag, control_, &reqs[1]),
            "MPI_Irecv (handshake verdict)");
  check_mpi(MPI_Isend(&mine, sizeof(Descriptor), MPI_BYTE, 0, kHelloTag, control_, &reqs[0]),
            "MPI_Isend (handshake)");
  // The master's own deadline runs from its arrival; allow it extra time to
  // name the missing ranks before concluding that the master itself is gone.
  const double grace = 2.0 + 0.1 * timeout_seconds_;
  const bool done = poll_until(
      [&] {
        int all = 0;
        check_mpi(MPI_Testall(2, reqs, &all, MPI_STATUSES_IGNORE), "MPI_Testall (handshake)");
        return all != 0;
      },
      deadline_after(timeout_seconds_ + grace));
  if (!done) {
    broken_ = true;
    throw TimeoutError(::tnt::detail::concat(
        "[tarantella rank ", rank_, "] collective #", mine.seq, " (", describe(mine),
        "): the master rank 0 did not confirm within ", timeout_seconds_ + grace,
        " s (TNT_COMM_TIMEOUT): rank 0 is stuck or far behind, or called a different number of "
        "collectives"));
  }
  return table;
}

}  // namespace tnt::comm
