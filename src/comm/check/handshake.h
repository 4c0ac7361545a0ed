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
// handshake, ranks only compare its fingerprint with their peers directly,
// without the master (response_cache.h). The fingerprint travels as the MPI
// tag of one message per peer and round (received with MPI_ANY_TAG on a
// communicator of its own), and that message's body is the payload itself
// for small allreduces: a cached 4 KiB allreduce is then one 4 KiB message
// each way, like a raw MPI_Allreduce (a separate header would have pushed it
// past OpenMPI's 4 KiB shared-memory eager limit). The verdict also compares
// message sizes, so ranks whose calls move different numbers of bytes can
// never pass; calls of equal size pass wrongly only if their fingerprints
// agree modulo MPI_TAG_UB (2^31 - 1 with OpenMPI: ~5e-10 per mismatch). That exchange is also
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
#include <functional>
#include <string>
#include <vector>

#include "comm/descriptor.h"
#include "comm/poll.h"

namespace tnt::comm {

class Handshake {
 public:
  /// `fast`: a communicator for the fingerprint exchange alone.
  Handshake(MPI_Comm control, MPI_Comm fast, int rank, int size, double timeout_seconds);

  /// Exchanges `mine` with all ranks and returns the full table (index =
  /// rank). Throws MismatchError, or TimeoutError naming missing ranks.
  std::vector<Descriptor> agree(Descriptor mine);
  bool broken() const { return broken_; }
  /// The ranks' host names (index = rank), for the messages that name a
  /// missing rank; empty: ranks only.
  void set_hosts(std::vector<std::string> hosts) { hosts_ = std::move(hosts); }
  const std::vector<std::string>& hosts() const { return hosts_; }
  /// Asked after a timeout where the missing ranks (of this group) are; its
  /// sentences ("rank 1 (host vm) is in stuck.py line 10 ...") end the
  /// TimeoutError's message. Unset: the message does not say.
  using Locator = std::function<std::string(const std::vector<int>& missing)>;
  void set_locator(Locator locator) { locator_ = std::move(locator); }

  /// A small allreduce carried by the fingerprint exchange itself, so that a
  /// cached small collective costs what a raw MPI_Allreduce costs: one
  /// message each way per round.
  struct Piggyback {
    void* data = nullptr;  ///< reduced in place; see same_everywhere
    int count = 0;
    std::size_t bytes = 0;  ///< at most kMaxPiggybackBytes
    MPI_Datatype type = MPI_DATATYPE_NULL;
    MPI_Op op = MPI_OP_NULL;
  };
  /// The most a Piggyback may hold. What is carried is chosen by the
  /// backend (kMaxCarriedOneHost / kMaxCarriedHosts).
  static constexpr std::size_t kMaxPiggybackBytes = 64 * 1024;
  /// Measured on 2 ranks over shared memory: carried, 16 KiB ran 1.2x of
  /// raw MPI against 0.9x as exchange + payload; 64 KiB 0.8x against 0.95x.
  static constexpr std::size_t kMaxCarriedOneHost = 16 * 1024;
  /// Between hosts the exchange's round trip is what a separate payload
  /// costs extra: 64 KiB ran 0.74-0.90x of raw MPI as exchange + payload
  /// between two simulated 10 Gbit/s hosts.
  static constexpr std::size_t kMaxCarriedHosts = 64 * 1024;

  /// Whether same_everywhere can carry a Piggyback: with a power-of-two
  /// number of ranks, where the exchange is recursive doubling (every rank
  /// combines every other rank's data exactly once, and the two partners of
  /// a round compute a op b and b op a, the same value, so all ranks end
  /// bitwise equal). Otherwise it is dissemination, which may count a rank
  /// twice: fine for the verdict, not for a sum.
  bool carries_payloads() const { return size_ > 1 && (size_ & (size_ - 1)) == 0; }
  /// Rounds of the exchange: ceil(log2 N).
  int rounds() const;

  /// The cheap check for a descriptor every rank has agreed to before.
  /// Every rank passes the fingerprint of its cached descriptor, or 0 on a
  /// cache miss; returns true on every rank when all passed the same
  /// non-zero value, false on every rank otherwise (then call agree() for
  /// the full table and its verdict). With `payload` (only where
  /// carries_payloads(); other ranks may pass none), its data is reduced
  /// over all ranks on the way: complete when this returns true, and touched
  /// before the last round only when rounds() > 1 (so pass a copy then).
  /// Throws TimeoutError naming the ranks that did not arrive.
  bool same_everywhere(std::uint64_t fingerprint, const Descriptor& mine,
                       Piggyback* payload = nullptr);

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
  /// "; " and the locator's sentences, or nothing.
  std::string where(const std::vector<int>& missing) const;
  /// Waits for the round's four requests with the engine's wait policy;
  /// names the missing ranks on a timeout.
  void wait_round(MPI_Request* reqs, MPI_Status* statuses, int from, const Descriptor& mine,
                  PollClock::time_point deadline, PollClock::time_point slow_after);
  /// The word a fingerprint travels as: an MPI tag, never 0.
  int tag_word(std::uint64_t fingerprint) const;

  MPI_Comm fast_ = MPI_COMM_NULL;  ///< the exchange's own: it receives any tag
  int tag_ub_ = 32767;             ///< the largest tag MPI allows (>= 32767)
  std::vector<char> scratch_;      ///< a peer's piggy-backed data, two halves

  MPI_Comm control_;
  int rank_;
  int size_;
  double timeout_seconds_;
  bool broken_ = false;
  std::vector<std::string> hosts_;
  Locator locator_;
};

}  // namespace tnt::comm
