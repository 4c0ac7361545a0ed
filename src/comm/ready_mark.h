// Private: when an asynchronous collective's GPU tensor was ready.
//
// A gradient bucket is enqueued from a backward hook, on the stream that
// produced its gradients, and runs later on the group's engine thread. If
// the NCCL stream waited on an event recorded at that later moment, on the
// engine thread's stream, it would wait for all the backward work queued by
// then, not only for the bucket's: the allreduce would start later and
// overlap less. So ProcessGroup records a mark (a device event) on the
// caller's current stream when it enqueues a GPU tensor, and the engine
// thread runs the backend's call inside a ReadyMarkScope; the NCCL backend
// makes its stream wait on that mark (comm/nccl/nccl_backend.cpp). Generic c10
// events: this builds without CUDA, where no tensor is on a GPU.
#pragma once

#include <memory>

#include <torch/types.h>

namespace c10 {
class Event;
}

namespace tnt::comm {

/// An event recorded now on the current stream of `t`'s device (on this
/// thread), or null for a tensor in host memory.
std::shared_ptr<c10::Event> ready_mark(const torch::Tensor& t);

/// Makes `mark` this thread's current ready mark while it lives.
class ReadyMarkScope {
 public:
  explicit ReadyMarkScope(const c10::Event* mark);
  ~ReadyMarkScope();
  ReadyMarkScope(const ReadyMarkScope&) = delete;
  ReadyMarkScope& operator=(const ReadyMarkScope&) = delete;

 private:
  const c10::Event* previous_;
};

/// The mark of the collective this thread runs, or null (a blocking call:
/// the caller's stream is the one the backend sees).
const c10::Event* current_ready_mark();

}  // namespace tnt::comm
