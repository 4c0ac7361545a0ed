// Private: point-to-point transfers over MPI, for the MPI backend (and for
// host tensors on an NCCL group, which is layered on it).
//
// Note: how a transfer runs. Each one is posted at once, on the caller's
// thread, on a communicator of its own (so it never meets a collective's
// traffic), and moves while some thread of this rank tests or waits on any
// transfer of the group (there is no progress thread: a rank that computes
// does not pay for one).
//  * The sender posts a P2pHeader (dtype, shape, label; transfer.h) and
//    then the data in pieces of 1 MiB, each an MPI_Isend, and a receive for
//    the receiver's P2pAck.
//  * The receiver posts a receive for the header when recv is called. When
//    it arrives, the receiver compares it with its own buffer; only then
//    does it post the receives for the data: into the buffer when they
//    agree, into scratch when they do not (so that a mismatch consumes the
//    sender's data and the next transfer on the tag starts clean). When the
//    data is in, it answers with the ack (agreed, or its own header).
//  * A send completes when its data has gone and its ack has come (the
//    receiver has taken it; MPI_Ssend's meaning, gloo's and NCCL's); a
//    recv when its data is in. On a disagreement both raise the same
//    MismatchError.
// Tags: the header of a transfer on tag t travels on MPI tag 2t+1, its
// data on 2t+2, and every ack from one rank to another on tag 0 (it
// carries the transfer's tag and number). Headers and data of one tag are
// matched in the order posted (MPI does not let messages with the same tag
// overtake each other), and a receiver posts the data receives of a tag's
// transfers in order, after their headers: so the n-th send on a tag meets
// the n-th recv.
//
// A device transport (NCCL, given by the NCCL backend layered on this one:
// DevicePayload) moves the data of GPU tensors instead of MPI. Its sends
// and receives have no tags and must be issued in the same order at both
// ends, so the receiver issues its receive when it takes the header (in
// its order), then acks at once; the sender issues its send when the ack
// arrives, and the acks from one rank arrive in the order they were sent.
// Header, ack and the checks stay on MPI. Every device header to a peer
// carries the token of the pair's channel (NCCL's unique id): the receiver
// takes headers tag by tag, not in the sender's order, and joins the
// channel at the first it takes. A failure of the device transport is the
// failure of the transfer it happened in: a receiver that cannot issue its
// receive says so in its ack, and the sender then fails too, sending
// nothing.
//
// Waiting: NeighbourWait (poll.h), restarted whenever a piece arrives. A
// wait that lasts TNT_COMM_TIMEOUT raises a TimeoutError naming the peer
// and the transfer's label, with where the peer is (its stack, as for a
// missing rank of a collective); the transfers of the group are unusable
// after that, and the backend reports broken() so the runtime aborts the
// job instead of finalizing MPI with messages in flight.
#pragma once

#include <mpi.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <tarantella/comm/backend.h>

namespace tnt::comm {

/// The device side of one transfer posted on a DevicePayload.
class DeviceTransfer {
 public:
  virtual ~DeviceTransfer() = default;
  /// Issues what may be issued and returns whether the transfer's device
  /// work has completed; throws on an asynchronous error of the transport.
  virtual bool test() = 0;
};

/// A transport for the data of GPU tensors (NCCL). Called under MpiP2p's
/// lock, so it needs none of its own.
class DevicePayload {
 public:
  virtual ~DevicePayload() = default;
  /// Whether `tensor`'s data goes this way (a tensor on this rank's GPU).
  virtual bool takes(const torch::Tensor& tensor) const = 0;
  /// The token of the channel to `peer` (at most kMaxChannelToken bytes),
  /// opening it on the first call; the same token on every later call.
  virtual std::string open_to(int peer) = 0;
  /// Joins the channel that `peer` opened with `token`; nothing once
  /// joined.
  virtual void join_from(int peer, const std::string& token) = 0;
  /// The moment `tensor` is ready on the calling thread's stream.
  virtual std::shared_ptr<void> ready_mark(const torch::Tensor& tensor) = 0;
  /// Sends `tensor` / receives into `tensor`, once `ready` has passed (a
  /// receive buffer may be memory that the caller's stream still reads:
  /// the caching allocator hands it out at once). Issued in call order per
  /// peer and direction.
  virtual std::shared_ptr<DeviceTransfer> send(int peer, const torch::Tensor& tensor,
                                               std::shared_ptr<void> ready) = 0;
  virtual std::shared_ptr<DeviceTransfer> recv(int peer, const torch::Tensor& tensor,
                                               std::shared_ptr<void> ready) = 0;
  /// Ends every channel's pending work (after a timeout).
  virtual void abort() noexcept = 0;
};

class MpiP2p {
 public:
  /// Where a rank of the group is, in words (the backend's stack service);
  /// may be empty.
  using Locator = std::function<std::string(int rank)>;
  /// Duplicates `comm`. `hosts` (index = rank) name the peers' machines.
  MpiP2p(MPI_Comm comm, double timeout_seconds, bool threads_multiple,
         std::vector<std::string> hosts, Locator where);
  ~MpiP2p();
  MpiP2p(const MpiP2p&) = delete;
  MpiP2p& operator=(const MpiP2p&) = delete;

  std::shared_ptr<P2pWork> send(const Transfer& transfer);
  std::shared_ptr<P2pWork> recv(const Transfer& transfer);
  /// True after a transfer timed out.
  bool broken() const;
  /// The largest tag a caller may pass.
  int max_tag() const;
  /// Moves GPU tensors' data over `payload` from now on (the NCCL backend
  /// sets it before any transfer).
  void set_device_payload(std::shared_ptr<DevicePayload> payload);

  struct Core;

 private:
  std::shared_ptr<Core> core_;
};

}  // namespace tnt::comm
