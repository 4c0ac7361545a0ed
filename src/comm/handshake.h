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

  MPI_Comm control_;
  int rank_;
  int size_;
  double timeout_seconds_;
  bool broken_ = false;
};

}  // namespace tnt::comm
