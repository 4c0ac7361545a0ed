#include "comm/handshake.h"

#include <algorithm>
#include <chrono>
#include <string>
#include <thread>

#include <tarantella/base/error.h>
#include <tarantella/base/logging.h>

#include "comm/dtype.h"
#include "comm/mpi_check.h"
#include "comm/poll.h"

namespace tnt::comm {
namespace {

constexpr int kHelloTag = 101;
constexpr int kVerdictTag = 102;

constexpr int kProbeTag = 103;
constexpr int kProbeVerdictTag = 104;
constexpr int kFingerprintTag = 110;  // + round, rounds < 32

// The handshake's waits: yield for 0.2 ms, then naps of up to 1 ms.
template <typename Done, typename OnSlow>
bool wait_for(Done done, PollClock::time_point deadline, double timeout_seconds, OnSlow on_slow) {
  return poll_until(done, deadline, std::chrono::microseconds(200), std::chrono::microseconds(1000),
                    deadline_after(stall_warning_seconds(timeout_seconds)), on_slow);
}


// Tests each request on its own (completed ones become MPI_REQUEST_NULL);
// true when all are complete. MPI_Testall would leave completed requests
// active while others are pending, and a completed one must read as arrived
// if the deadline passes.
bool test_each(std::vector<MPI_Request>& requests, const char* what) {
  bool all = true;
  for (MPI_Request& req : requests) {
    if (req == MPI_REQUEST_NULL) continue;
    int done = 0;
    check_mpi(MPI_Test(&req, &done, MPI_STATUS_IGNORE), what);
    all = all && done;
  }
  return all;
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

bool Handshake::same_everywhere(std::uint64_t fingerprint, const Descriptor& mine) {
  TNT_CHECK(!broken_, "the communicator is unusable after an earlier collective timed out; the "
                      "job must be restarted");
  if (size_ == 1) return fingerprint != 0;
  // max over ranks of fp and of ~fp: all equal iff max(fp) == ~max(~fp). Max
  // is idempotent, so dissemination (which may count a rank twice) is exact
  // at any N, not only powers of two.
  std::uint64_t acc[2] = {fingerprint, ~fingerprint};
  std::uint64_t in[2] = {0, 0};
  const auto deadline = deadline_after(timeout_seconds_);
  const auto slow_after = deadline_after(stall_warning_seconds(timeout_seconds_));
  for (int step = 1, round = 0; step < size_; step *= 2, ++round) {
    const int to = (rank_ + step) % size_;
    const int from = (rank_ - step + size_) % size_;
    MPI_Request reqs[2];
    check_mpi(MPI_Irecv(in, 2, MPI_UINT64_T, from, kFingerprintTag + round, control_, &reqs[0]),
              "MPI_Irecv (fingerprint)");
    check_mpi(MPI_Isend(acc, 2, MPI_UINT64_T, to, kFingerprintTag + round, control_, &reqs[1]),
              "MPI_Isend (fingerprint)");
    const bool done = wait_on_peers(
        [&] {
          int all = 0;
          check_mpi(MPI_Testall(2, reqs, &all, MPI_STATUSES_IGNORE), "MPI_Testall (fingerprint)");
          return all != 0;
        },
        deadline, slow_after, [&] {
          ::tnt::log::warning(::tnt::detail::concat(
              "collective #", mine.seq, " (", describe(mine), "): still waiting for rank ", from,
              " (or a rank before it) after ", stall_warning_seconds(timeout_seconds_),
              " s; the job fails if not every rank arrives within ", timeout_seconds_,
              " s (TNT_COMM_TIMEOUT)"));
        });
    if (!done) peers_missing(mine);
    acc[0] = std::max(acc[0], in[0]);
    acc[1] = std::max(acc[1], in[1]);
  }
  return acc[0] != 0 && acc[0] == ~acc[1];
}

void Handshake::peers_missing(const Descriptor& mine) {
  // The exchange's requests dangle now; probe_missing marks us broken.
  const std::vector<int> missing =
      probe_missing(mine.seq, std::min(5.0, 0.5 + 0.1 * timeout_seconds_));
  const std::string who =
      missing.empty()
          ? std::string("every rank still answers, but not all of them reached this collective: "
                        "they called different numbers of collectives")
          : ::tnt::detail::concat(rank_list(missing),
                                  " did not arrive within the timeout (TNT_COMM_TIMEOUT): the "
                                  "rank is stuck, far behind, or called a different number of "
                                  "collectives");
  throw TimeoutError(::tnt::detail::concat("[tarantella rank ", rank_, "] collective #", mine.seq,
                                           " (", describe(mine), " on rank ", rank_, "): ", who));
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
  wait_for(
      [&] { return test_each(recvs, "MPI_Test (handshake)"); },
      deadline, timeout_seconds_,
      [&] {
        // The stall warning (as Horovod's stall inspector): who is missing
        // from which collective, well before the timeout ends the job.
        std::vector<int> missing;
        for (int r = 1; r < size_; ++r) {
          if (recvs[r - 1] != MPI_REQUEST_NULL) missing.push_back(r);
        }
        ::tnt::log::warning(::tnt::detail::concat(
            "collective #", mine.seq, " (", describe(mine), "): ", rank_list(missing),
            " not arrived after ", stall_warning_seconds(timeout_seconds_),
            " s; the job fails if they do not arrive within ", timeout_seconds_,
            " s (TNT_COMM_TIMEOUT)"));
      });
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
  const bool done = wait_for(
      [&] {
        int all = 0;
        check_mpi(MPI_Testall(2, reqs, &all, MPI_STATUSES_IGNORE), "MPI_Testall (handshake)");
        return all != 0;
      },
      deadline_after(timeout_seconds_ + grace), timeout_seconds_, [] {});
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

std::vector<int> Handshake::probe_missing(std::int64_t seq, double seconds) {
  broken_ = true;
  if (size_ == 1) return {};
  const auto deadline = deadline_after(seconds);
  std::vector<int> missing;
  if (rank_ == 0) {
    std::vector<std::int64_t> seqs(size_, -1);
    std::vector<MPI_Request> recvs(size_ - 1, MPI_REQUEST_NULL);
    for (int r = 1; r < size_; ++r) {
      check_mpi(MPI_Irecv(&seqs[r], 1, MPI_INT64_T, r, kProbeTag, control_, &recvs[r - 1]),
                "MPI_Irecv (probe)");
    }
    wait_for(
        [&] { return test_each(recvs, "MPI_Test (probe)"); },
        deadline, 1e9, [] {});
    std::vector<int> present(size_, 1);
    for (int r = 1; r < size_; ++r) {
      if (recvs[r - 1] == MPI_REQUEST_NULL) continue;
      MPI_Cancel(&recvs[r - 1]);
      MPI_Request_free(&recvs[r - 1]);
      present[r] = 0;
      missing.push_back(r);
    }
    for (int r = 1; r < size_; ++r) {
      if (!present[r]) continue;
      // Small and eager: completes without the receiver's help.
      MPI_Request req = MPI_REQUEST_NULL;
      check_mpi(MPI_Isend(present.data(), size_, MPI_INT, r, kProbeVerdictTag, control_, &req),
                "MPI_Isend (probe verdict)");
      MPI_Request_free(&req);
    }
    return missing;
  }
  std::vector<int> present(size_, 0);
  MPI_Request reqs[2];
  check_mpi(MPI_Irecv(present.data(), size_, MPI_INT, 0, kProbeVerdictTag, control_, &reqs[1]),
            "MPI_Irecv (probe verdict)");
  check_mpi(MPI_Isend(&seq, 1, MPI_INT64_T, 0, kProbeTag, control_, &reqs[0]),
            "MPI_Isend (probe)");
  const bool answered = wait_for(
      [&] {
        int done = 0;
        check_mpi(MPI_Test(&reqs[1], &done, MPI_STATUS_IGNORE), "MPI_Test (probe verdict)");
        return done != 0;
      },
      deadline_after(seconds + 0.5), 1e9, [] {});
  if (!answered) return {0};
  for (int r = 0; r < size_; ++r) {
    if (!present[r]) missing.push_back(r);
  }
  return missing;
}

}  // namespace tnt::comm
