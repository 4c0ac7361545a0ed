// ncclSend/ncclRecv for an NCCL group's transfers: channels per peer and
// direction, opened lazily, transfers issued in order (nccl_p2p.h).
#include "comm/nccl/nccl_p2p.h"

#include <cstring>

#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <tarantella/base/error.h>

#include "comm/nccl/nccl_comm.h"
#include "comm/transfer.h"

namespace tnt::comm {

// One transfer on a channel: queued until the channel is ready, launched
// (ncclSend/ncclRecv called), then issued once NCCL has put it on the
// stream (the call's host-side work is over: in non-blocking mode that may
// come later than the call's return, and take as long as the peer takes to
// connect). Only then is `done` recorded after it.
struct NcclItem final : DeviceTransfer {
  bool test() override;

  std::shared_ptr<NcclP2p::Channel> channel;
  torch::Tensor tensor;
  bool sending = false;
  std::shared_ptr<void> ready;  ///< an at::cuda::CUDAEvent on the caller's stream
  at::cuda::CUDAEvent done;
  bool launched = false;
  bool issued = false;
};

struct NcclP2p::Channel {
  Channel(c10::DeviceIndex d, int p) : device(d), peer(p), own_stream(d), stream(own_stream.get()) {}

  /// Joins the two-rank communicator as `rank` (0: sender, 1: receiver).
  void join(const ncclUniqueId& id, int rank) {
    const c10::cuda::CUDAGuard guard(device);
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    const ncclResult_t rc = ncclCommInitRankConfig(&comm, 2, id, rank, &config);
    if (rc != ncclSuccess && rc != ncclInProgress) {
      comm = nullptr;
      check_nccl(rc, "ncclCommInitRankConfig (point-to-point)");
    }
    other = 1 - rank;
  }

  /// Whether the communicator has no host-side work in progress (joined,
  /// and the last call's work done); throws on its asynchronous error.
  bool joined() const {
    TNT_CHECK(comm != nullptr, "the NCCL point-to-point channel with rank ", peer,
              " was aborted after an earlier failure: the job must end");
    ncclResult_t state = ncclInProgress;
    const ncclResult_t rc = ncclCommGetAsyncError(comm, &state);
    if (rc != ncclSuccess) check_nccl(rc, "ncclCommGetAsyncError", comm);
    if (state == ncclInProgress) return false;
    check_nccl(state, "the NCCL point-to-point channel", comm);
    return true;
  }

  /// Launches and issues the queued transfers, in order, as far as the
  /// communicator lets them go without waiting: nothing here waits for the
  /// peer (the caller holds the group's lock, and the peer may need this
  /// rank to go on to another channel first). The transfer's own wait has
  /// the deadline.
  /// A failure here ends the channel: it is aborted and its queue let go,
  /// so that no transfer of it can be issued out of order afterwards.
  void issue_queued() {
    try {
      while (!queued.empty() && joined()) {
        NcclItem& front = *queued.front();
        if (!front.launched) {
          launch(front);
          continue;  // NCCL may still be connecting: joined() says when it is done
        }
        const c10::cuda::CUDAGuard guard(device);
        front.done.record(stream);
        last_done.record(stream);
        front.issued = true;
        queued.pop_front();
      }
    } catch (...) {
      end();
      throw;
    }
  }

  /// A throw here ends the channel (issue_queued): never launched twice.
  void launch(NcclItem& item) {
    const c10::cuda::CUDAGuard guard(device);
    if (item.ready) static_cast<at::cuda::CUDAEvent*>(item.ready.get())->block(stream);
    const std::size_t n = item.tensor.nbytes();
    if (n > 0) {
      void* data = item.tensor.data_ptr();
      const ncclResult_t rc =
          item.sending ? ncclSend(data, n, ncclUint8, other, comm, stream.stream())
                       : ncclRecv(data, n, ncclUint8, other, comm, stream.stream());
      if (rc != ncclSuccess && rc != ncclInProgress) {
        check_nccl(rc, item.sending ? "ncclSend" : "ncclRecv", comm);
      }
      // The caching allocator must not hand the memory out again before
      // this stream is done with it.
      c10::cuda::CUDACachingAllocator::recordStream(item.tensor.storage().data_ptr(), stream);
    }
    item.launched = true;
  }

  void abort() noexcept {
    if (comm != nullptr) ncclCommAbort(comm);
    comm = nullptr;
  }

  /// Aborts and lets the queued transfers go (they hold the channel: the
  /// cycle would keep both alive).
  void end() noexcept {
    abort();
    queued.clear();
  }

  ~Channel() {
    if (comm == nullptr) return;
    // Destroy waits for the device work issued, which may wait for a peer
    // that is gone: only an idle channel is destroyed, others are aborted
    // (so is one whose peer never joined).
    bool idle = queued.empty();
    try {
      idle = idle && last_done.query();
    } catch (...) {
      idle = false;
    }
    end_comm(comm, idle);
  }

  c10::DeviceIndex device;
  int peer;  ///< the group rank at the other end
  OwnStream own_stream;
  c10::cuda::CUDAStream stream;  ///< own_stream's
  ncclComm_t comm = nullptr;
  int other = 1;  ///< the other end's rank in the two-rank communicator
  std::string token;  ///< NCCL's unique id, on the sender's side
  std::deque<std::shared_ptr<NcclItem>> queued;
  at::cuda::CUDAEvent last_done;  ///< after the last transfer issued
};

bool NcclItem::test() {
  // An issued transfer answers for itself only: a later transfer's failure
  // to launch is that transfer's to report.
  if (issued) {
    if (done.query()) return true;
    channel->joined();  // throws on an asynchronous error
    return false;
  }
  channel->joined();  // throws once the channel has ended after a failure
  channel->issue_queued();
  return issued && done.query();
}

NcclP2p::NcclP2p(c10::DeviceIndex device) : device_(device) {}

NcclP2p::~NcclP2p() {
  // Channels with transfers still queued are held by them: end those here.
  for (auto* channels : {&out_, &in_}) {
    for (auto& [peer, channel] : *channels) {
      if (!channel->queued.empty()) channel->end();
    }
  }
}

bool NcclP2p::takes(const torch::Tensor& tensor) const {
  return tensor.defined() && tensor.is_cuda() && tensor.device().index() == device_;
}

std::string NcclP2p::open_to(int peer) {
  if (const auto it = out_.find(peer); it != out_.end()) return it->second->token;
  ncclUniqueId id;
  check_nccl(ncclGetUniqueId(&id), "ncclGetUniqueId (point-to-point)");
  auto channel = std::make_shared<Channel>(device_, peer);
  channel->join(id, 0);
  static_assert(NCCL_UNIQUE_ID_BYTES <= kMaxChannelToken, "a header carries NCCL's unique id");
  channel->token.assign(id.internal, NCCL_UNIQUE_ID_BYTES);
  out_[peer] = channel;
  return channel->token;
}

void NcclP2p::join_from(int peer, const std::string& token) {
  if (in_.count(peer) != 0) return;  // every header carries the token; the first joined
  ncclUniqueId id;
  std::memcpy(id.internal, token.data(), NCCL_UNIQUE_ID_BYTES);
  auto channel = std::make_shared<Channel>(device_, peer);
  channel->join(id, 1);
  in_[peer] = channel;
}

std::shared_ptr<void> NcclP2p::ready_mark(const torch::Tensor& tensor) {
  auto mark = std::make_shared<at::cuda::CUDAEvent>();
  mark->record(c10::cuda::getCurrentCUDAStream(tensor.device().index()));
  return mark;
}

std::shared_ptr<NcclP2p::Channel> NcclP2p::channel(
    std::map<int, std::shared_ptr<Channel>>& channels, int peer, const char* direction) const {
  const auto it = channels.find(peer);
  TNT_CHECK(it != channels.end(), "no NCCL point-to-point channel ", direction, " rank ", peer,
            " was opened: the first transfer's header should have opened it (a bug: report it)");
  return it->second;
}

std::shared_ptr<DeviceTransfer> NcclP2p::send(int peer, const torch::Tensor& tensor,
                                              std::shared_ptr<void> ready) {
  auto item = std::make_shared<NcclItem>();
  item->channel = channel(out_, peer, "to");
  item->tensor = tensor;
  item->sending = true;
  item->ready = std::move(ready);
  item->channel->queued.push_back(item);
  item->channel->issue_queued();
  return item;
}

std::shared_ptr<DeviceTransfer> NcclP2p::recv(int peer, const torch::Tensor& tensor,
                                              std::shared_ptr<void> ready) {
  auto item = std::make_shared<NcclItem>();
  item->channel = channel(in_, peer, "from");
  item->tensor = tensor;
  item->ready = std::move(ready);
  item->channel->queued.push_back(item);
  item->channel->issue_queued();
  return item;
}

void NcclP2p::abort() noexcept {
  for (auto& [peer, channel] : out_) channel->end();
  for (auto& [peer, channel] : in_) channel->end();
}

}  // namespace tnt::comm
