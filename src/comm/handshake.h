// Private: the consistency check and arrival timeout that precede every
// collective.
//
// How it works. Each rank describes the collective it is about to run (kind,
// reduce op, dtype, shape, root, its own sequence number) in a fixed-size
// Descriptor and sends it to the master rank with a non-blocking send. The
// master collects the N descriptors, marks the ranks that did not arrive
// within the timeout, and sends the complete table back to every rank that
// did arrive. Every rank then runs the same pure check over the same table,
// so either all ranks proceed to the payload (which cannot hang any more:
// everyone is there and agrees on its shape) or all raise the same error,
// which lists what each rank had. The cost is two small messages per rank
// per collective; for allgatherv the table doubles as the exchange of
// per-rank counts.
//
// The fast path (same_everywhere): once a descriptor has passed the full
// handshake, ranks only compare its 64-bit fingerprint with their peers
// directly, without the master (response_cache.h). That exchange is also
// where a rank waits for late peers, with the engine's wait policy (poll.h:
// MPI_Test, yields, then naps of at most 50 us), so the blocking payload that
// follows finds everyone there and only moves data.
//
// All waiting is done by polling non-blocking requests against a deadline,
// with a short yield-then-sleep backoff, because a blocking MPI call cannot
// be timed out. After a timeout the communicator is "broken" (requests are
// left dangling on a peer that never came): the runtime then aborts the job
// instead of finalizing.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <vector>

#include "comm/descriptor.h"

namespace tnt::comm {

class Handshake {
 public:
  Handshake(MPI_Comm control, int rank, int size, double timeout_seconds);

  /// Exchanges `mine` with all ranks and returns the full table (index =
  /// rank). Throws MismatchError, or TimeoutError naming missing ranks.
  std::vector<Descriptor> agree(Descriptor mine);
  bool broken() const { return broken_; }

  /// Every rank passes the fingerprint of its cached descriptor, or 0 on a
  /// cache miss; returns true on every rank when all passed the same non-zero
  /// value, false on every rank otherwise (then call agree() for the full
  /// table and its verdict). A dissemination exchange of (fp, ~fp) under max
  /// with the peers at distance 1, 2, 4, ...: ceil(log2 N) rounds of one
  /// small message each way, no master. Throws TimeoutError naming the ranks
  /// that did not arrive (`mine` names the collective).
  bool same_everywhere(std::uint64_t fingerprint, const Descriptor& mine);

  /// After the payload of collective #`seq` did not complete in time (every
  /// rank had agreed to it, so one stopped on the way: SIGSTOP, a hung
  /// device, a dead link): every rank that can still answer checks in with
  /// the master within `seconds`. Returns the ranks that did not, as far as
  /// this rank can tell ({0} when the master itself does not answer). The
  /// communicator is broken afterwards.
  std::vector<int> probe_missing(std::int64_t seq, double seconds);

 private:
  std::vector<Descriptor> collect_as_master(const Descriptor& mine);
  std::vector<Descriptor> await_verdict(const Descriptor& mine);
  [[noreturn]] void peers_missing(const Descriptor& mine);

  MPI_Comm control_;
  int rank_;
  int size_;
  double timeout_seconds_;
  bool broken_ = false;
};

}  // namespace tnt::comm
