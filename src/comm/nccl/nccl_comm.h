// Private: one NCCL communicator, owned (destroyed, or aborted after a
// failure), and the error text of NCCL calls. Built only with NCCL
// (src/comm/nccl/nccl.cmake); nothing above comm/ sees <nccl.h>.
//
// The communicator is made as NCCL's examples make one over MPI: rank 0 of
// the group asks for a unique id, the id goes to every rank over the
// group's MPI backend (a checked broadcast, so a rank that is missing or
// calls something else is named as for any collective), then every rank
// calls ncclCommInitRankConfig on its own GPU. The communicator is
// non-blocking (config.blocking = 0), so that joining has a deadline
// (TNT_COMM_TIMEOUT): every rank has just passed the checked broadcast, so a
// rank that has not joined by then died on the way, and the host's control
// channel names it. In this mode a call may return ncclInProgress while its
// host-side work goes on: check_nccl waits for it before the next call.
#pragma once

#include <nccl.h>

#include <string>

#include <c10/core/Device.h>
#include <c10/cuda/CUDAStream.h>

namespace tnt::comm {

class MpiBackend;

/// Ends `comm` (not null; noexcept): ncclCommFinalize, its host-side
/// work waited for (bounded), then ncclCommDestroy; ncclCommAbort instead
/// when `idle` is false (device work may still wait for a peer, which
/// destroy would wait for without end), on an error, or when finalizing
/// does not complete.
void end_comm(ncclComm_t comm, bool idle) noexcept;

/// Throws tnt::Error "<call> failed: <NCCL's words>" unless `rc` is
/// ncclSuccess, or ncclInProgress that `comm` then completes (within the
/// thread's SettleLimit, else 300 s).
void check_nccl(ncclResult_t rc, const char* call, ncclComm_t comm = nullptr);

/// While alive, check_nccl on this thread waits at most `seconds` for a
/// call's host-side work: a collective's (a lazily connecting communicator
/// waits there for its peers) gets TNT_COMM_TIMEOUT, not the 300 s backstop.
class SettleLimit {
 public:
  explicit SettleLimit(double seconds);
  ~SettleLimit();
  SettleLimit(const SettleLimit&) = delete;
  SettleLimit& operator=(const SettleLimit&) = delete;

 private:
  double previous_;
};

/// A CUDA stream of a communicator's own while it lives: non-blocking, of
/// the highest priority. Not one of torch's pool streams, which are handed
/// out in turn (32 per device) to user code and to other groups as well:
/// sharing one would queue a transfer that waits for a peer in front of
/// unrelated work, and the two could wait on each other. Given back, not
/// destroyed (the caching allocator may still record events on it for
/// tensors it touched): the next OwnStream of the device takes it.
class OwnStream {
 public:
  explicit OwnStream(c10::DeviceIndex device);
  ~OwnStream();
  OwnStream(const OwnStream&) = delete;
  OwnStream& operator=(const OwnStream&) = delete;

  const c10::cuda::CUDAStream& get() const { return stream_; }

 private:
  c10::cuda::CUDAStream stream_;
};

class NcclComm {
 public:
  /// Collective over `host`'s ranks: one communicator over the same ranks,
  /// in the same order, on CUDA device `device` of this process.
  NcclComm(MpiBackend& host, c10::DeviceIndex device);
  ~NcclComm();
  NcclComm(const NcclComm&) = delete;
  NcclComm& operator=(const NcclComm&) = delete;

  ncclComm_t get() const { return comm_; }
  /// The asynchronous error of the communicator (a failed peer, a network
  /// error), or ncclSuccess / ncclInProgress.
  ncclResult_t async_error() const;
  /// Ends the communicator's pending work without waiting for peers (after
  /// a timeout or an asynchronous error); get() is null afterwards.
  void abort() noexcept;
  bool aborted() const { return comm_ == nullptr; }

 private:
  ncclComm_t comm_ = nullptr;
};

}  // namespace tnt::comm
