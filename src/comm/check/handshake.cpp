#include "comm/check/handshake.h"

#include <algorithm>
#include <chrono>
#include <cstring>
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

Handshake::Handshake(MPI_Comm control, MPI_Comm fast, int rank, int size,
                     double timeout_seconds)
    : fast_(fast),
      control_(control),
      rank_(rank),
      size_(size),
      timeout_seconds_(timeout_seconds) {
  int* tag_ub = nullptr;
  int found = 0;
  if (fast_ != MPI_COMM_NULL) MPI_Comm_get_attr(fast_, MPI_TAG_UB, &tag_ub, &found);
  if (found && tag_ub != nullptr) tag_ub_ = *tag_ub;
}

int Handshake::rounds() const {
  int n = 0;
  for (int step = 1; step < size_; step *= 2) ++n;
  return n;
}

int Handshake::tag_word(std::uint64_t fingerprint) const {
  if (fingerprint == 0) return 0;
  return 1 + static_cast<int>(fingerprint % static_cast<std::uint64_t>(tag_ub_));
}

std::vector<Descriptor> Handshake::agree(Descriptor mine) {
  TNT_CHECK(!broken_, "the communicator is unusable after an earlier collective timed out; the "
                      "job must be restarted");
  std::vector<Descriptor> table =
      size_ == 1 ? std::vector<Descriptor>{mine}
                 : (rank_ == 0 ? collect_as_master(mine) : await_verdict(mine));
  const std::string verdict = check_table(table);
  if (!verdict.empty()) {
    std::vector<int> missing;
    for (int r = 0; r < static_cast<int>(table.size()); ++r) {
      if (!table[r].arrived) missing.push_back(r);
    }
    if (!missing.empty()) {
      broken_ = true;
      throw TimeoutError(
          ::tnt::detail::concat("[tarantella rank ", rank_, "] ", verdict, where(missing)));
    }
    throw MismatchError(::tnt::detail::concat("[tarantella rank ", rank_, "] ", verdict));
  }
  return table;
}

void Handshake::wait_round(MPI_Request* reqs, MPI_Status* statuses, int from,
                           const Descriptor& mine, PollClock::time_point deadline,
                           PollClock::time_point slow_after) {
  const bool done = wait_on_peers(
      [&] {
        int all = 0;
        check_mpi(MPI_Testall(4, reqs, &all, statuses), "MPI_Testall (fingerprint)");
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
}

bool Handshake::same_everywhere(std::uint64_t fingerprint, const Descriptor& mine,
                                Piggyback* payload) {
  TNT_CHECK(!broken_, "the communicator is unusable after an earlier collective timed out; the "
                      "job must be restarted");
  if (size_ == 1) return fingerprint != 0;
  TNT_CHECK(payload == nullptr || carries_payloads(),
            "internal: piggy-backed payloads need a power-of-two group");
  // Each round, a rank sends its word (as the tag) to one peer and receives
  // one peer's: its own word while everything it has heard of so far agreed
  // with it, else 0. `ok` is then "all ranks heard of agree with me", an AND
  // that both recursive doubling (partner rank ^ step) and dissemination
  // (to rank + step, from rank - step; it may hear of a rank twice, harmless
  // for an AND) spread to every rank in ceil(log2 N) rounds, so every rank
  // ends with the same verdict.
  const int word = tag_word(fingerprint);
  const bool pairs = carries_payloads();
  bool ok = word != 0;
  // Always two data messages, empty ones included, so every rank sends and
  // receives the same messages. Up to kSplitBytes the data goes as two
  // halves, so that a 4 KiB payload travels as two 2 KiB messages: OpenMPI's
  // shared-memory eager limit is 4 KiB including its header, and one byte
  // over it costs a rendezvous round trip (4 KiB allreduce 3.8 us instead
  // of 1.6). Larger payloads go whole (two rendezvous in parallel measured
  // slower than one at 16-64 KiB).
  constexpr std::size_t kSplitBytes = 7 * 1024;
  char* const data = payload ? static_cast<char*>(payload->data) : nullptr;
  const bool split = payload && payload->bytes <= kSplitBytes;
  const int counts[2] = {payload ? (split ? payload->count / 2 : payload->count) : 0,
                         payload ? (split ? payload->count - payload->count / 2 : 0) : 0};
  const int elem = payload && payload->count > 0
                       ? static_cast<int>(payload->bytes / static_cast<std::size_t>(payload->count))
                       : 0;
  const int bytes[2] = {counts[0] * elem, counts[1] * elem};
  char* const pieces[2] = {data, data == nullptr ? nullptr : data + bytes[0]};
  if (scratch_.size() < 2 * kMaxPiggybackBytes) scratch_.resize(2 * kMaxPiggybackBytes);
  char* const incoming[2] = {scratch_.data(), scratch_.data() + kMaxPiggybackBytes};
  const auto deadline = deadline_after(timeout_seconds_);
  const auto slow_after = deadline_after(stall_warning_seconds(timeout_seconds_));
  for (int step = 1; step < size_; step *= 2) {
    const int to = pairs ? rank_ ^ step : (rank_ + step) % size_;
    const int from = pairs ? rank_ ^ step : (rank_ - step + size_) % size_;
    MPI_Request reqs[4];
    MPI_Status statuses[4];
    for (int i = 0; i < 2; ++i) {
      check_mpi(MPI_Irecv(incoming[i], static_cast<int>(kMaxPiggybackBytes), MPI_BYTE, from,
                          MPI_ANY_TAG, fast_, &reqs[i]),
                "MPI_Irecv (fingerprint)");
    }
    for (int i = 0; i < 2; ++i) {
      check_mpi(MPI_Isend(pieces[i], bytes[i], MPI_BYTE, to, ok ? word : 0, fast_, &reqs[2 + i]),
                "MPI_Isend (fingerprint)");
    }
    wait_round(reqs, statuses, from, mine, deadline, slow_after);
    for (int i = 0; i < 2; ++i) {
      int received = 0;
      MPI_Get_count(&statuses[i], MPI_BYTE, &received);
      ok = ok && statuses[i].MPI_TAG == word && received == bytes[i];
    }
    // Combined only while everything agrees: with one round (N = 2) the
    // caller's data is touched only when the verdict is yes. Both partners
    // compute (lower rank's) op (higher rank's), operands in the same
    // places, so they end bitwise equal even where op is not symmetric
    // bit for bit (min/max with a NaN).
    for (int i = 0; ok && payload && i < 2; ++i) {
      if (rank_ < from) {
        check_mpi(MPI_Reduce_local(pieces[i], incoming[i], counts[i], payload->type, payload->op),
                  "MPI_Reduce_local");
        std::memcpy(pieces[i], incoming[i], static_cast<std::size_t>(bytes[i]));
      } else {
        check_mpi(MPI_Reduce_local(incoming[i], pieces[i], counts[i], payload->type, payload->op),
                  "MPI_Reduce_local");
      }
    }
  }
  return ok;
}

void Handshake::peers_missing(const Descriptor& mine) {
  // The exchange's requests dangle now; probe_missing marks us broken.
  const std::vector<int> missing =
      probe_missing(mine.seq, std::min(5.0, 0.5 + 0.1 * timeout_seconds_));
  const std::string who =
      missing.empty()
          ? std::string("every rank still answers, but not all of them reached this collective: "
                        "they called different numbers of collectives")
          : ::tnt::detail::concat(rank_list(missing, hosts_),
                                  " did not arrive within the timeout (TNT_COMM_TIMEOUT): the "
                                  "rank is stuck, far behind, or called a different number of "
                                  "collectives");
  throw TimeoutError(::tnt::detail::concat("[tarantella rank ", rank_, "] collective #", mine.seq,
                                           " (", describe(mine), " on rank ", rank_, "): ", who,
                                           where(missing)));
}

std::string Handshake::where(const std::vector<int>& missing) const {
  if (!locator_ || missing.empty()) return "";
  const std::string sentences = locator_(missing);
  return sentences.empty() ? "" : "; " + sentences;
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
            "collective #", mine.seq, " (", describe(mine), "): ", rank_list(missing, hosts_),
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
        "collectives",
        where({0})));
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
