#include "comm/handshake.h"

#include <chrono>
#include <map>
#include <sstream>
#include <thread>

#include <tarantella/comm/collectives.h>
#include <tarantella/runtime/error.h>

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

std::string rank_list(const std::vector<int>& ranks) {
  std::ostringstream out;
  out << (ranks.size() == 1 ? "rank " : "ranks ");
  for (std::size_t i = 0; i < ranks.size(); ++i) out << (i ? "," : "") << ranks[i];
  return out.str();
}

// The fields that must agree for `kind`, as a comparable string.
std::string signature(const Descriptor& d) {
  const auto kind = static_cast<Collective>(d.collective);
  if (kind == Collective::Barrier || kind == Collective::Finalize) return describe(d);
  if (kind == Collective::Allgatherv) {
    // Dimension 0 may differ; everything else must match.
    Descriptor row = d;
    row.numel = 0;
    row.sizes[0] = 0;
    return describe(row);
  }
  return describe(d);
}

}  // namespace

const char* to_string(Collective c) {
  switch (c) {
    case Collective::Allreduce: return "allreduce";
    case Collective::Broadcast: return "broadcast";
    case Collective::Allgather: return "allgather";
    case Collective::Allgatherv: return "allgatherv";
    case Collective::ReduceScatter: return "reduce_scatter";
    case Collective::Barrier: return "barrier";
    case Collective::Finalize: return "runtime shutdown";
  }
  return "?";
}

std::string describe(const Descriptor& d) {
  std::ostringstream out;
  const auto kind = static_cast<Collective>(d.collective);
  out << to_string(kind);
  if (d.op >= 0) out << "(" << to_string(static_cast<ReduceOp>(d.op)) << ")";
  if (d.root >= 0) out << "(root " << d.root << ")";
  if (kind == Collective::Barrier || kind == Collective::Finalize) return out.str();
  if (d.dtype >= 0) out << " " << to_string(static_cast<DType>(d.dtype));
  out << " [";
  for (int i = 0; i < d.ndim && i < kMaxDims; ++i) out << (i ? ", " : "") << d.sizes[i];
  if (d.ndim > kMaxDims) out << ", ...";
  out << "]";
  return out.str();
}

std::string check_table(const std::vector<Descriptor>& table) {
  std::vector<int> missing, failed;
  std::map<std::string, std::vector<int>> groups;  // signature -> ranks
  for (int r = 0; r < static_cast<int>(table.size()); ++r) {
    if (!table[r].arrived) {
      missing.push_back(r);
    } else if (table[r].failed) {
      failed.push_back(r);
    } else {
      groups[signature(table[r])].push_back(r);
    }
  }
  const long long seq = table.empty() ? 0 : table[0].seq;
  if (!missing.empty()) {
    return detail::concat("collective #", seq, " (", describe(table[0]), " on rank 0): ",
                          rank_list(missing),
                          " did not arrive within the timeout (TNT_COMM_TIMEOUT): the rank is "
                          "stuck, far behind, or called a different number of collectives");
  }
  if (!failed.empty()) {
    return detail::concat("collective #", seq, ": ", rank_list(failed),
                          " rejected its arguments (see that rank's error above); no data was "
                          "exchanged");
  }
  if (groups.size() <= 1) return "";
  std::ostringstream out;
  out << "collective #" << seq << " mismatch across ranks: ";
  bool first = true;
  for (const auto& [sig, ranks] : groups) {
    out << (first ? "" : "; ") << rank_list(ranks) << " called " << sig;
    first = false;
  }
  out << ". Every rank must call the same collectives in the same order with the same "
         "operation, dtype, shape and root";
  return out.str();
}

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
      throw TimeoutError(detail::concat("[tarantella rank ", rank_, "] ", verdict));
    }
    throw MismatchError(detail::concat("[tarantella rank ", rank_, "] ", verdict));
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
    throw TimeoutError(detail::concat(
        "[tarantella rank ", rank_, "] collective #", mine.seq, " (", describe(mine),
        "): the master rank 0 did not confirm within ", timeout_seconds_ + grace,
        " s (TNT_COMM_TIMEOUT): rank 0 is stuck or far behind, or called a different number of "
        "collectives"));
  }
  return table;
}

}  // namespace tnt::comm
