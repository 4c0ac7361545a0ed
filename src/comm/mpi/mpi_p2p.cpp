// Point-to-point transfers over MPI: the protocol of mpi_p2p.h's note. All
// state sits in one Core behind one mutex; whichever thread waits on a
// transfer drives every transfer of the group (progress()), so two ranks
// that each wait on their own send still take each other's data.
#include "comm/mpi/mpi_p2p.h"

#include <algorithm>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <utility>

#include <c10/core/StreamGuard.h>
#include <tarantella/base/error.h>
#include <tarantella/base/logging.h>

#include "comm/descriptor.h"
#include "comm/mpi/exchange.h"
#include "comm/mpi_check.h"
#include "comm/transfer.h"
#include "comm/poll.h"
#include "comm/ready_mark.h"

namespace tnt::comm {
namespace {

constexpr int kAckTag = 0;
constexpr auto kPiece = static_cast<std::int64_t>(kMaxExchangedBytes);
int header_tag(int tag) { return 2 * tag + 1; }
int data_tag(int tag) { return 2 * tag + 2; }

std::string prefixed(int rank, const std::string& text) {
  return ::tnt::detail::concat("[tarantella rank ", rank, "] ", text);
}

// Posts `bytes` at `data` as pieces of kPiece bytes; appends the requests.
void post_pieces(bool receive, char* data, std::int64_t bytes, int peer, int tag, MPI_Comm comm,
                 std::vector<MPI_Request>& out) {
  for (std::int64_t at = 0; at < bytes; at += kPiece) {
    const int n = static_cast<int>(std::min(kPiece, bytes - at));
    MPI_Request r = MPI_REQUEST_NULL;
    if (receive) {
      check_mpi(MPI_Irecv(data + at, n, MPI_BYTE, peer, tag, comm, &r), "MPI_Irecv (recv)");
    } else {
      check_mpi(MPI_Isend(data + at, n, MPI_BYTE, peer, tag, comm, &r), "MPI_Isend (send)");
    }
    out.push_back(r);
  }
}

struct Tested {
  bool moved = false;  ///< a request completed in this test
  bool all = true;     ///< every request has completed
};

// Tests `reqs`; completed ones become MPI_REQUEST_NULL.
Tested test_pieces(std::vector<MPI_Request>& reqs, std::vector<int>& scratch) {
  if (reqs.empty()) return {};
  scratch.resize(reqs.size());
  int count = 0;
  check_mpi(MPI_Testsome(static_cast<int>(reqs.size()), reqs.data(), &count, scratch.data(),
                         MPI_STATUSES_IGNORE),
            "MPI_Testsome (point-to-point)");
  const bool all = std::all_of(reqs.begin(), reqs.end(),
                               [](MPI_Request r) { return r == MPI_REQUEST_NULL; });
  return {count != MPI_UNDEFINED && count > 0, all};
}

void cancel_all(std::vector<MPI_Request>& reqs) {
  for (MPI_Request& r : reqs) {
    if (r == MPI_REQUEST_NULL) continue;
    MPI_Cancel(&r);
    MPI_Request_free(&r);
  }
}

}  // namespace

// One posted transfer; the Core drives it.
struct P2pOp : P2pWork {
  P2pOp(std::shared_ptr<MpiP2p::Core> c, Transfer tr, bool recv)
      : core(std::move(c)), t(std::move(tr)), receiving(recv) {}
  bool test() override;
  void wait() override;

  std::shared_ptr<MpiP2p::Core> core;
  Transfer t;
  bool receiving;
  torch::Tensor host;  ///< the bytes sent, or where they land (t.tensor on the CPU)
  std::vector<MPI_Request> reqs;  ///< the data's pieces (and a send's header)
  std::vector<int> indices;       ///< MPI_Testsome's scratch
  std::shared_ptr<DeviceTransfer> dev;  ///< the data's transfer on the device transport
  bool started = false;           ///< some data has moved
  bool done = false;
  std::exception_ptr error;
};

// Whether `op`'s device work (if any) is over; its failure becomes the op's.
bool device_done(P2pOp& op) {
  if (!op.dev) return true;
  try {
    if (!op.dev->test()) return false;
  } catch (...) {
    op.error = std::current_exception();
  }
  op.dev.reset();
  return true;
}

struct SendOp : P2pOp {
  using P2pOp::P2pOp;
  P2pHeader header;
  std::shared_ptr<void> ready;  ///< a GPU tensor's ready mark
  bool sent = false;
  bool acked = false;
};

struct RecvOp : P2pOp {
  using P2pOp::P2pOp;
  enum class Stage { Header, Data, Device, Done } stage = Stage::Header;
  P2pHeader mine, theirs;
  MPI_Request header_req = MPI_REQUEST_NULL;
  std::vector<char> scratch;  ///< a mismatched transfer's data, thrown away
  std::shared_ptr<void> ready;  ///< a GPU buffer's ready mark
  /// The receiver's stream, for a GPU tensor received through host memory:
  /// the copy onto the GPU runs on it, whichever thread drives progress
  /// (a background sender's thread has the default stream, and the buffer
  /// may be a block the receiver's stream has just given back).
  std::optional<c10::Stream> consumer;
  bool agreed = true;
};

struct MpiP2p::Core {
  struct Peer {
    std::map<int, std::int64_t> sent, received;  ///< next number per tag
    std::map<std::pair<std::int64_t, std::int64_t>, std::shared_ptr<SendOp>> awaiting;  ///< (tag, seq)
    MPI_Request ack_req = MPI_REQUEST_NULL;
    P2pAck ack_in;
    std::map<int, std::deque<std::shared_ptr<RecvOp>>> streams;  ///< per tag, in posting order
  };
  struct Outgoing {
    MPI_Request req;
    std::shared_ptr<void> keep;  ///< the message's bytes
  };

  std::mutex mutex;
  MPI_Comm comm = MPI_COMM_NULL;
  int rank = 0;
  int size = 1;
  double timeout = 0;
  bool threads_multiple = false;
  std::vector<std::string> hosts;
  Locator where;
  int max_tag = 16382;
  std::shared_ptr<DevicePayload> device;  ///< GPU tensors' transport, if any
  bool broken = false;
  bool closed = false;
  std::vector<Peer> peers;
  std::vector<std::shared_ptr<SendOp>> sending;
  std::vector<Outgoing> outgoing;

  /// Drives every transfer; true when anything moved. Lock held.
  bool progress() {
    bool moved = drain_outgoing();
    for (int p = 0; p < size; ++p) {
      Peer& peer = peers[static_cast<std::size_t>(p)];
      moved |= advance_acks(p, peer);
      for (auto& [tag, stream] : peer.streams) moved |= advance_stream(p, tag, stream);
    }
    return advance_sends() || moved;
  }

  bool drain_outgoing() {
    const auto before = outgoing.size();
    outgoing.erase(std::remove_if(outgoing.begin(), outgoing.end(),
                                  [](Outgoing& o) {
                                    int flag = 0;
                                    check_mpi(MPI_Test(&o.req, &flag, MPI_STATUS_IGNORE),
                                              "MPI_Test (point-to-point)");
                                    return flag != 0;
                                  }),
                   outgoing.end());
    return outgoing.size() != before;
  }

  bool advance_acks(int p, Peer& peer) {
    bool moved = false;
    for (;;) {
      if (peer.awaiting.empty() && peer.ack_req == MPI_REQUEST_NULL) return moved;
      if (peer.ack_req == MPI_REQUEST_NULL) {
        check_mpi(MPI_Irecv(&peer.ack_in, sizeof(P2pAck), MPI_BYTE, p, kAckTag, comm, &peer.ack_req),
                  "MPI_Irecv (ack)");
      }
      int flag = 0;
      check_mpi(MPI_Test(&peer.ack_req, &flag, MPI_STATUS_IGNORE), "MPI_Test (ack)");
      if (!flag) return moved;
      moved = true;
      const auto it = peer.awaiting.find({peer.ack_in.tag, peer.ack_in.seq});
      if (it == peer.awaiting.end()) continue;  // cannot happen: acks answer our own headers
      // Off the list first: a send that fails below is over, not acked again.
      const std::shared_ptr<SendOp> op = it->second;
      peer.awaiting.erase(it);
      op->acked = true;
      if (peer.ack_in.receiver.failed) {
        op->error = std::make_exception_ptr(Error(receiver_failed_text(op->t, rank)));
      } else if (!peer.ack_in.agreed) {
        op->error = std::make_exception_ptr(MismatchError(prefixed(
            rank, mismatch_text(op->header, rank, peer.ack_in.receiver, p, op->t.tag))));
      } else if (op->header.device) {
        // The receiver has issued its receive: the send goes next, in ack
        // order. Its failure is this send's, not that of whichever transfer
        // happens to drive progress.
        try {
          op->dev = device->send(p, op->host, op->ready);
        } catch (...) {
          op->error = std::current_exception();
        }
      }
    }
  }

  bool advance_sends() {
    bool moved = false;
    for (auto& op : sending) {
      if (!op->sent) {
        const Tested tested = test_pieces(op->reqs, op->indices);
        op->started |= tested.moved;
        op->sent = tested.all;
        moved |= tested.moved;
      }
      if (op->sent && op->acked && device_done(*op)) {
        op->done = true;
        moved = true;
      }
    }
    sending.erase(std::remove_if(sending.begin(), sending.end(), [](auto& op) { return op->done; }),
                  sending.end());
    return moved;
  }

  // A tag's receives, in order: a header must be in before the data
  // receives of the transfers after it may be posted.
  bool advance_stream(int p, int tag, std::deque<std::shared_ptr<RecvOp>>& stream) {
    bool moved = false;
    for (auto& op : stream) {
      if (op->stage == RecvOp::Stage::Header) {
        int flag = 0;
        check_mpi(MPI_Test(&op->header_req, &flag, MPI_STATUS_IGNORE), "MPI_Test (header)");
        if (!flag) break;
        moved = true;
        take_header(p, tag, *op);
      }
      if (op->stage == RecvOp::Stage::Data) {
        const Tested tested = test_pieces(op->reqs, op->indices);
        op->started |= tested.moved;
        moved |= tested.moved;
        if (tested.all) {
          send_ack(p, tag, *op);
          if (op->agreed && !op->t.tensor.device().is_cpu()) {
            // A failed copy (a CUDA error) is this recv's, and the recv is
            // over: not retried, with the ack sent again, on every pass.
            // From pinned memory, queued on the consumer's stream (the host
            // does not wait; torch's pinned allocator keeps the buffer
            // until the copy is done).
            try {
              const c10::StreamGuard on(*op->consumer);
              op->t.tensor.copy_(op->host, /*non_blocking=*/op->host.is_pinned());
            } catch (...) {
              op->error = std::current_exception();
            }
          }
          finish(*op);
          moved = true;
        }
      }
      if (op->stage == RecvOp::Stage::Device && device_done(*op)) {
        finish(*op);
        moved = true;
      }
    }
    while (!stream.empty() && stream.front()->stage == RecvOp::Stage::Done) stream.pop_front();
    return moved;
  }

  void take_header(int p, int tag, RecvOp& op) {
    if (op.theirs.failed) {
      op.error = std::make_exception_ptr(Error(sender_failed_text(op.t, rank)));
      op.stage = RecvOp::Stage::Done;
      op.done = true;
      return;
    }
    const std::string verdict = mismatch_text(op.theirs, p, op.mine, rank, tag);
    char* into = static_cast<char*>(op.host.data_ptr());
    if (!verdict.empty()) {
      // Take the sender's bytes anyway (data sent over MPI), so that the
      // next transfer on this tag starts with its own.
      op.agreed = false;
      op.error = std::make_exception_ptr(MismatchError(prefixed(rank, verdict)));
      op.scratch.resize(static_cast<std::size_t>(op.theirs.nbytes));
      into = op.scratch.data();
    } else if (op.mine.device) {
      try {
        // Every device header carries the channel's token: the first one
        // taken opens it, whatever its tag (tags are taken in their own
        // order, not in the sender's).
        if (op.theirs.opens) device->join_from(p, std::string(op.theirs.channel, kMaxChannelToken));
        op.dev = device->recv(p, op.t.tensor, op.ready);
      } catch (...) {
        // This recv fails with the transport's error; the sender learns it
        // from the ack (it must not issue a send nobody receives).
        op.error = std::current_exception();
        op.mine.failed = 1;
        send_ack(p, tag, op);
        finish(op);
        return;
      }
      send_ack(p, tag, op);  // now: the sender issues its send on it
      op.stage = RecvOp::Stage::Device;
      return;
    }
    if (!op.theirs.device) post_pieces(true, into, op.theirs.nbytes, p, data_tag(tag), comm, op.reqs);
    op.stage = RecvOp::Stage::Data;
  }

  void finish(RecvOp& op) {
    op.stage = RecvOp::Stage::Done;
    op.done = true;
  }

  void send_ack(int p, int tag, RecvOp& op) {
    auto ack = std::make_shared<P2pAck>();
    ack->tag = tag;
    ack->seq = op.theirs.seq;
    ack->agreed = op.agreed ? 1 : 0;
    ack->receiver = op.mine;
    MPI_Request req = MPI_REQUEST_NULL;
    check_mpi(MPI_Isend(ack.get(), sizeof(P2pAck), MPI_BYTE, p, kAckTag, comm, &req),
              "MPI_Isend (ack)");
    outgoing.push_back({req, ack});
  }

  /// Throws the TimeoutError of `op`, whose wait ran out; the transfers
  /// are unusable afterwards.
  [[noreturn]] void time_out(P2pOp& op) {
    bool started = false;
    {
      std::lock_guard<std::mutex> lock(mutex);
      broken = true;
      started = op.started;
      if (device) device->abort();
      if (op.receiving) {
        auto& r = static_cast<RecvOp&>(op);
        std::vector<MPI_Request> header{r.header_req};
        cancel_all(header);
        r.header_req = MPI_REQUEST_NULL;
        cancel_all(op.reqs);
      }
    }
    const std::string place = where ? where(op.t.peer) : std::string();
    throw TimeoutError(timeout_text(op.t, op.receiving, rank, timeout,
                                    rank_list({op.t.peer}, hosts), started, place));
  }

  [[noreturn]] void unusable(const P2pOp& op) const {
    throw Error(prefixed(rank, ::tnt::detail::concat(
                                   transfer_text(op.t, op.receiving), ": ",
                                   closed ? "the group was destroyed before it completed"
                                          : "the point-to-point transfers of this group are "
                                            "unusable after an earlier one timed out (see that "
                                            "error): the job must end")));
  }

  // Whether `t` is a GPU tensor that travels through host memory (no
  // device transport takes it). Takes the lock for the payload only, so
  // that the caller can stage the tensor before taking it.
  bool staged_through_host(const torch::Tensor& t) {
    if (!t.defined() || t.device().is_cpu()) return false;
    std::shared_ptr<DevicePayload> payload;
    {
      std::lock_guard<std::mutex> lock(mutex);
      payload = device;
    }
    return !payload || !payload->takes(t);
  }

  /// Throws for bad arguments, before anything is posted; a sender whose
  /// tensor alone is bad tells its receiver first. Lock held.
  void check(const Transfer& t, bool receiving) {
    if (auto problem = transfer_problem(t, receiving, rank, size, max_tag)) {
      if (!receiving && peer_is_valid(t, rank, size, max_tag)) tell_failed(t);
      ::tnt::detail::throw_error(*problem);
    }
    TNT_CHECK(threads_multiple, transfer_text(t, receiving),
              ": point-to-point transfers need an MPI library with MPI_THREAD_MULTIPLE (they run "
              "on the calling thread beside the group's engine thread); this one provides less: "
              "use Debian's OpenMPI");
    TNT_CHECK(!broken && !closed, transfer_text(t, receiving),
              ": the point-to-point transfers of this group are unusable after an earlier one "
              "timed out (see that error): the job must end");
  }

  void tell_failed(const Transfer& t) {
    auto header = std::make_shared<P2pHeader>();
    header->seq = peers[static_cast<std::size_t>(t.peer)].sent[t.tag]++;
    header->failed = 1;
    MPI_Request req = MPI_REQUEST_NULL;
    check_mpi(MPI_Isend(header.get(), sizeof(P2pHeader), MPI_BYTE, t.peer, header_tag(t.tag), comm,
                        &req),
              "MPI_Isend (header)");
    outgoing.push_back({req, header});
  }
};

bool P2pOp::test() {
  std::lock_guard<std::mutex> lock(core->mutex);
  if (!done && !core->broken && !core->closed) core->progress();
  return done || core->broken || core->closed;
}

void P2pOp::wait() {
  NeighbourWait policy;
  const auto deadline = deadline_after(core->timeout);
  const auto slow = deadline_after(stall_warning_seconds(core->timeout));
  bool warned = false;
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(core->mutex);
      if (!done && (core->broken || core->closed)) core->unusable(*this);
      if (!done && core->progress()) policy.progress();
      if (done) break;
    }
    const auto now = PollClock::now();
    if (now >= deadline) core->time_out(*this);
    if (!warned && now >= slow) {
      warned = true;
      ::tnt::log::warning(prefixed(
          core->rank, ::tnt::detail::concat(transfer_text(t, receiving), " has waited ",
                                            stall_warning_seconds(core->timeout),
                                            " s for its peer; the job fails if it does not "
                                            "complete within ",
                                            core->timeout, " s (TNT_COMM_TIMEOUT)")));
    }
    policy.pause();
  }
  if (error) std::rethrow_exception(error);
}

MpiP2p::MpiP2p(MPI_Comm comm, double timeout_seconds, bool threads_multiple,
               std::vector<std::string> hosts, Locator where)
    : core_(std::make_shared<Core>()) {
  Core& c = *core_;
  check_mpi(MPI_Comm_dup(comm, &c.comm), "MPI_Comm_dup");
  MPI_Comm_set_errhandler(c.comm, MPI_ERRORS_RETURN);
  MPI_Comm_rank(c.comm, &c.rank);
  MPI_Comm_size(c.comm, &c.size);
  c.timeout = timeout_seconds;
  c.threads_multiple = threads_multiple || c.size == 1;
  c.hosts = std::move(hosts);
  c.where = std::move(where);
  int* tag_ub = nullptr;
  int found = 0;
  MPI_Comm_get_attr(c.comm, MPI_TAG_UB, &tag_ub, &found);
  if (found && tag_ub != nullptr) c.max_tag = (*tag_ub - 2) / 2;
  c.peers.resize(static_cast<std::size_t>(c.size));
}

MpiP2p::~MpiP2p() {
  std::lock_guard<std::mutex> lock(core_->mutex);
  Core& c = *core_;
  c.closed = true;
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized || c.broken) return;  // a broken job aborts; its requests stay
  for (auto& peer : c.peers) {
    std::vector<MPI_Request> ack{peer.ack_req};
    cancel_all(ack);
    peer.ack_req = MPI_REQUEST_NULL;
  }
  for (auto& o : c.outgoing) MPI_Request_free(&o.req);
  c.outgoing.clear();
  MPI_Comm_free(&c.comm);
}

std::shared_ptr<P2pWork> MpiP2p::send(const Transfer& t) {
  Core& c = *core_;
  // A GPU tensor that travels through host memory is copied there before
  // the lock is taken: the copy waits for the GPU work queued before it,
  // and the group's other transfers (a stage link's sender thread) move
  // meanwhile.
  torch::Tensor staged;
  if (c.staged_through_host(t.tensor)) staged = t.tensor.cpu();
  std::lock_guard<std::mutex> lock(c.mutex);
  c.check(t, false);
  auto op = std::make_shared<SendOp>(core_, t, false);
  const bool on_device = c.device && c.device->takes(t.tensor);
  op->host = on_device || t.tensor.device().is_cpu() ? t.tensor : staged;
  Core::Peer& peer = c.peers[static_cast<std::size_t>(t.peer)];
  op->header = header_of(op->host, peer.sent[t.tag]++, t.what);
  if (on_device) {
    op->header.device = 1;
    const std::string token = c.device->open_to(t.peer);
    op->header.opens = token.empty() ? 0 : 1;
    std::memcpy(op->header.channel, token.data(),
                std::min<std::size_t>(token.size(), kMaxChannelToken));
    op->ready = c.device->ready_mark(t.tensor);
  }
  MPI_Request req = MPI_REQUEST_NULL;
  check_mpi(MPI_Isend(&op->header, sizeof(P2pHeader), MPI_BYTE, t.peer, header_tag(t.tag), c.comm,
                      &req),
            "MPI_Isend (header)");
  op->reqs.push_back(req);
  if (!on_device) {
    post_pieces(false, static_cast<char*>(op->host.data_ptr()), op->header.nbytes, t.peer,
                data_tag(t.tag), c.comm, op->reqs);
  }
  peer.awaiting[{t.tag, op->header.seq}] = op;
  c.sending.push_back(op);
  return op;
}

std::shared_ptr<P2pWork> MpiP2p::recv(const Transfer& t) {
  Core& c = *core_;
  // A GPU tensor that travels through host memory arrives in a pinned host
  // buffer (allocated before the lock: a first allocation pins memory),
  // whose copy onto the GPU the host need not wait for.
  torch::Tensor staged;
  if (c.staged_through_host(t.tensor)) {
    staged = torch::empty(t.tensor.sizes(), t.tensor.options()
                                                .device(torch::kCPU)
                                                .pinned_memory(t.tensor.device().is_cuda()));
  }
  std::lock_guard<std::mutex> lock(c.mutex);
  c.check(t, true);
  auto op = std::make_shared<RecvOp>(core_, t, true);
  const bool on_device = c.device && c.device->takes(t.tensor);
  op->host = on_device || t.tensor.device().is_cpu() ? t.tensor : staged;
  Core::Peer& peer = c.peers[static_cast<std::size_t>(t.peer)];
  op->mine = header_of(t.tensor, peer.received[t.tag]++, t.what);
  op->mine.device = on_device ? 1 : 0;
  if (on_device) op->ready = c.device->ready_mark(t.tensor);
  if (!on_device && !t.tensor.device().is_cpu()) op->consumer = consumer_stream(t.tensor.device());
  check_mpi(MPI_Irecv(&op->theirs, sizeof(P2pHeader), MPI_BYTE, t.peer, header_tag(t.tag), c.comm,
                      &op->header_req),
            "MPI_Irecv (header)");
  peer.streams[t.tag].push_back(op);
  return op;
}

bool MpiP2p::broken() const {
  std::lock_guard<std::mutex> lock(core_->mutex);
  return core_->broken;
}

int MpiP2p::max_tag() const { return core_->max_tag; }

void MpiP2p::set_device_payload(std::shared_ptr<DevicePayload> payload) {
  std::lock_guard<std::mutex> lock(core_->mutex);
  core_->device = std::move(payload);
}

}  // namespace tnt::comm
