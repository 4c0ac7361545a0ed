// Private: the staged path of a transport that reads host memory (MPI) for
// tensors that live on a GPU, e.g. when several ranks share one GPU
// (tarantella --ranks-per-gpu K), where NCCL cannot serve them.
//
// Note: how a staged collective overlaps with backward.
//  1. to_host() records an event on the calling thread's current stream of
//     the tensor's device (after the kernels that produced the gradients),
//     or takes the request's ready mark where it has one (comm/ready_mark.h:
//     a request run on the engine thread), makes a side stream wait on it, and copies the tensor into a pinned
//     host buffer on that side stream (non-blocking). The host waits for
//     that copy alone: the kernels queued after it (the rest of backward)
//     keep running on the GPU meanwhile.
//  2. The transport reduces the host copy.
//  3. to_device() copies the result back on the side stream and makes the
//     caller's stream wait on it (the request's, where the engine thread runs
//     it); the host does not wait.
// A collective whose result has another shape (allgather, reduce_scatter)
// receives it in pinned memory of its own (result_buffer) and copies it to
// a new device tensor the same way (result_to_device).
// The pinned buffers are reused: one per dtype, grown to the largest tensor
// staged (pinning memory costs far more than a copy). A buffer is reused only
// through to_host(), which waits for every earlier copy on the side stream
// (stream order), so a result still being copied back is never overwritten.
// Tensors on the CPU pass through untouched.
#pragma once

#include <c10/core/Stream.h>
#include <torch/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>

namespace tnt::comm {

/// The reused host buffers, one per dtype. Bookkeeping only, so a CPU test
/// can drive it with an ordinary allocator.
class StagingBuffers {
 public:
  /// Allocates a 1-D host tensor of `numel` elements of `dtype`.
  using Allocate = std::function<torch::Tensor(std::int64_t numel, torch::ScalarType dtype)>;
  explicit StagingBuffers(Allocate allocate);

  /// A contiguous host tensor shaped `sizes`, a view of the dtype's buffer
  /// (grown when too small: to the request, at least 1.5 x the old size).
  /// Valid until the next call with the same dtype.
  torch::Tensor view(at::IntArrayRef sizes, torch::ScalarType dtype);
  /// How many buffers were allocated so far (growth included).
  int allocations() const { return allocations_; }
  /// Elements in the dtype's buffer (0: none yet).
  std::int64_t capacity(torch::ScalarType dtype) const;

 private:
  Allocate allocate_;
  std::map<torch::ScalarType, torch::Tensor> buffers_;
  int allocations_ = 0;
};

/// Pinned (page-locked) host memory, for copies that overlap with kernels.
torch::Tensor allocate_pinned(std::int64_t numel, torch::ScalarType dtype);

/// The device <-> host copies of the staged path (see the note above).
/// Driven by one thread at a time, as its backend is.
class HostStaging {
 public:
  /// `timeout_seconds`: how long to_host() waits for its copy before it
  /// gives up with an error (a device that hangs).
  explicit HostStaging(double timeout_seconds, StagingBuffers::Allocate allocate = allocate_pinned);
  ~HostStaging();
  HostStaging(const HostStaging&) = delete;
  HostStaging& operator=(const HostStaging&) = delete;

  /// `t` itself when it is on the CPU; else a host copy of it (a view of a
  /// reused buffer, valid until the next to_host()), returned once the copy
  /// is done.
  torch::Tensor to_host(const torch::Tensor& t);
  /// Writes `host` (from to_host, reduced) into `target`: nothing to do when
  /// `target` is that same CPU tensor; for a device tensor the copy runs on
  /// the side stream and `target`'s current stream waits for it.
  void to_device(torch::Tensor& target, const torch::Tensor& host);
  /// Host memory for the result of a collective on `like` whose shape
  /// differs from its input's (allgather, reduce_scatter), shaped `sizes`:
  /// a new CPU tensor when `like` is on the CPU; else a view of a reused
  /// pinned buffer kept apart from to_host()'s, valid until the next call.
  /// Call it after the collective's to_host(): that waits for every earlier
  /// copy on the side stream, so the previous result's copy back has read
  /// the buffer before it is overwritten.
  torch::Tensor result_buffer(at::IntArrayRef sizes, const torch::Tensor& like);
  /// A tensor on `device` holding `host` (from result_buffer): `host` itself
  /// for the CPU; else a new tensor, copied on the side stream, with the
  /// consumer's stream waiting for the copy (the host does not).
  torch::Tensor result_to_device(const torch::Tensor& host, const torch::Device& device);
  /// Device tensors staged so far (for tests and the timeline).
  std::int64_t staged() const { return staged_; }

 private:
  struct Device;  // the side stream of one GPU (CUDA types stay in the .cpp)
  Device& device_state(const torch::Device& device);
  /// `target` (on a GPU) <- `host` on the side stream; `caller` waits.
  void copy_back(torch::Tensor& target, const torch::Tensor& host, const c10::Stream& caller);

  double timeout_seconds_;
  StagingBuffers buffers_;
  StagingBuffers results_;  ///< result_buffer()'s, apart from to_host()'s
  std::map<int, std::unique_ptr<Device>> devices_;
  std::int64_t staged_ = 0;
};

}  // namespace tnt::comm
