// Private: point-to-point data of GPU tensors over NCCL (ncclSend/ncclRecv),
// the device transport of an NCCL group's transfers. Headers, acks, the
// checks and the timeouts stay on the group's MPI transfers (mpi_p2p.h),
// which call this in the order NCCL needs (see its note).
//
// One channel per peer and direction: a communicator of two ranks (the
// sender is its rank 0) and a stream of its own. NCCL's sends and receives
// carry no tags and a stream runs in order, so one channel for both
// directions would let each rank's send wait on the device for the other's
// receive queued behind it; collectives' communicator and stream stay
// apart too (the engine thread issues those, the caller's thread these).
// A channel is opened lazily by the first send to a peer; every header to
// that peer carries NCCL's unique id (the receiver takes headers tag by
// tag, so the first it takes joins). Both ends join without blocking
// (config.blocking = 0). A transfer is queued until the channel is ready,
// launched (ncclSend/ncclRecv), and issued once NCCL has put it on the
// stream; nothing here waits for the peer, as MpiP2p calls it under its
// lock (a rank that waited for one channel to connect could keep its peer
// from reaching the other). A transfer completes when an event recorded
// after it on the channel's stream has passed (the same rule as the
// collectives: a finished Handle means finished device work). Its stream
// is its own (OwnStream), and an idle channel is destroyed, a busy one
// aborted (destroy would wait for a peer that may be gone).
#pragma once

#include <deque>
#include <map>
#include <memory>
#include <string>

#include <c10/core/Device.h>

#include "comm/mpi/mpi_p2p.h"

namespace tnt::comm {

class NcclP2p final : public DevicePayload {
 public:
  /// Transfers of tensors on CUDA device `device` (this rank's GPU).
  explicit NcclP2p(c10::DeviceIndex device);
  ~NcclP2p() override;
  NcclP2p(const NcclP2p&) = delete;
  NcclP2p& operator=(const NcclP2p&) = delete;

  bool takes(const torch::Tensor& tensor) const override;
  std::string open_to(int peer) override;
  void join_from(int peer, const std::string& token) override;
  std::shared_ptr<void> ready_mark(const torch::Tensor& tensor) override;
  std::shared_ptr<DeviceTransfer> send(int peer, const torch::Tensor& tensor,
                                       std::shared_ptr<void> ready) override;
  std::shared_ptr<DeviceTransfer> recv(int peer, const torch::Tensor& tensor,
                                       std::shared_ptr<void> ready) override;
  void abort() noexcept override;

  struct Channel;

 private:
  std::shared_ptr<Channel> channel(std::map<int, std::shared_ptr<Channel>>& channels, int peer,
                                   const char* direction) const;

  c10::DeviceIndex device_;
  std::map<int, std::shared_ptr<Channel>> out_;  ///< to each peer
  std::map<int, std::shared_ptr<Channel>> in_;   ///< from each peer
};

}  // namespace tnt::comm
