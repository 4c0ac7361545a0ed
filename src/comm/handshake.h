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
#include <string>
#include <vector>

namespace tnt::comm {

enum class Collective : std::int32_t {
  Allreduce,
  Broadcast,
  Allgather,
  Allgatherv,
  ReduceScatter,
  Barrier,
  Finalize
};
const char* to_string(Collective c);

constexpr int kMaxDims = 8;

/// What one rank is about to do. Trivially copyable: sent as raw bytes.
struct Descriptor {
  std::int64_t seq = 0;
  std::int32_t collective = 0;
  std::int32_t op = -1;      ///< ReduceOp, or -1 where none applies
  std::int32_t dtype = -1;   ///< DType, or -1 where none applies
  std::int32_t root = -1;    ///< broadcast root, or -1
  std::int32_t ndim = 0;
  std::int32_t arrived = 1;  ///< set to 0 by the master for a missing rank
  std::int32_t failed = 0;   ///< 1: the rank rejected its own arguments
  std::int32_t pad = 0;
  std::int64_t numel = 0;
  std::int64_t sizes[kMaxDims] = {};
};

/// Human-readable form, e.g. "allreduce(sum) float32 [2, 3]".
std::string describe(const Descriptor& d);

/// The verdict on a complete table: empty if consistent, else the message
/// every rank raises. Pure, so all ranks reach the same conclusion.
std::string check_table(const std::vector<Descriptor>& table);

class Handshake {
 public:
  Handshake(MPI_Comm control, int rank, int size, double timeout_seconds);

  /// Exchanges `mine` with all ranks and returns the full table (index =
  /// rank). Throws MismatchError, or TimeoutError naming missing ranks.
  std::vector<Descriptor> agree(Descriptor mine);
  bool broken() const { return broken_; }

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
