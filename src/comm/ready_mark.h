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
//
// The mark also names the caller's stream: a result that the engine thread
// copies back without the host waiting (the staged path, comm/mpi/host_staging.h)
// must be ordered before that stream's next use of it, which need not be
// the engine thread's own current stream (a user's torch.cuda.stream).
#pragma once

#include <memory>

#include <c10/core/Event.h>
#include <c10/core/Stream.h>
#include <torch/types.h>

namespace tnt::comm {

/// When a GPU tensor was ready, and on which stream of the caller's.
struct ReadyMark {
  c10::Event event;
  c10::Stream stream;
};

/// An event recorded now on the current stream of `t`'s device (on this
/// thread), with that stream, or null for a tensor in host memory.
std::shared_ptr<ReadyMark> ready_mark(const torch::Tensor& t);

/// Makes `mark` this thread's current ready mark while it lives.
class ReadyMarkScope {
 public:
  explicit ReadyMarkScope(const ReadyMark* mark);
  ~ReadyMarkScope();
  ReadyMarkScope(const ReadyMarkScope&) = delete;
  ReadyMarkScope& operator=(const ReadyMarkScope&) = delete;

 private:
  const ReadyMark* previous_;
};

/// The mark of the collective this thread runs, or null (a blocking call:
/// the caller's stream is the one the backend sees).
const ReadyMark* current_ready_mark();

/// The stream that consumes a collective's result on `device`: the mark's
/// (the caller's, where the engine thread runs it), else this thread's
/// current one.
c10::Stream consumer_stream(const c10::Device& device);

}  // namespace tnt::comm
