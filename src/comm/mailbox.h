// Private: point-to-point transfers between the ranks of an in-process group
// (threads as ranks; in_process.cpp). One Mailbox per group, shared by its
// ranks. A transfer is a Letter in its (sender, receiver, tag) stream: the
// n-th send and the n-th recv of a stream share the n-th letter, and
// whichever of the two comes second checks the sender's header against the
// receiver's buffer and copies the data, so neither side has to drive the
// other. Waits sleep on a condition variable; a wait longer than the
// group's timeout names the peer and the label, as over MPI, and leaves the
// mailbox broken. The verdicts and sentences are transfer.h's, so tests on
// this backend see the words that MPI ranks see.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>

#include <tarantella/comm/backend.h>

namespace tnt::comm {

class Mailbox {
 public:
  Mailbox(int size, double timeout_seconds);

  /// Posts a send from rank `from`; throws for bad arguments (telling the
  /// receiver first when only the tensor is bad).
  std::shared_ptr<P2pWork> send(int from, const Transfer& transfer);
  /// Posts a recv into rank `to`'s tensor; throws for bad arguments.
  std::shared_ptr<P2pWork> recv(int to, const Transfer& transfer);
  /// True after a transfer timed out.
  bool broken() const;

  struct Letter;

 private:
  class Work;
  struct Stream {
    std::int64_t sent = 0;
    std::int64_t received = 0;
    std::map<std::int64_t, std::shared_ptr<Letter>> letters;  ///< not yet delivered
  };
  /// The stream's letter number `seq`, made if it is not there yet. Lock held.
  std::shared_ptr<Letter> letter(int from, int to, int tag, bool sending);
  /// Checks and copies once both sides are in. Lock held.
  void deliver(Letter& letter, int from, int to, int tag);

  const int size_;
  const double timeout_seconds_;
  mutable std::mutex mutex_;
  std::condition_variable delivered_;
  bool broken_ = false;
  std::map<std::tuple<int, int, int>, Stream> streams_;  ///< (from, to, tag)
};

}  // namespace tnt::comm
