#include "comm/mpi/host_staging.h"

#include <c10/core/Event.h>
#include <c10/core/Stream.h>
#include <c10/core/StreamGuard.h>
#include <c10/core/impl/VirtualGuardImpl.h>
#include <tarantella/base/error.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>

#include "comm/poll.h"
#include "comm/ready_mark.h"

namespace tnt::comm {

StagingBuffers::StagingBuffers(Allocate allocate) : allocate_(std::move(allocate)) {}

torch::Tensor StagingBuffers::view(at::IntArrayRef sizes, torch::ScalarType dtype) {
  std::int64_t numel = 1;
  for (const auto s : sizes) numel *= s;
  torch::Tensor& buffer = buffers_[dtype];
  if (!buffer.defined() || buffer.numel() < numel) {
    const std::int64_t grown = buffer.defined() ? buffer.numel() + buffer.numel() / 2 : 0;
    buffer = allocate_(std::max(numel, grown), dtype);
    TNT_CHECK(buffer.defined() && buffer.dim() == 1 && buffer.numel() >= numel &&
                  buffer.scalar_type() == dtype && buffer.device().is_cpu(),
              "the staging allocator returned no 1-D host tensor of ", numel, " elements of ",
              c10::toString(dtype));
    ++allocations_;
  }
  return buffer.narrow(0, 0, numel).view(sizes);
}

std::int64_t StagingBuffers::capacity(torch::ScalarType dtype) const {
  const auto it = buffers_.find(dtype);
  return it == buffers_.end() ? 0 : it->second.numel();
}

torch::Tensor allocate_pinned(std::int64_t numel, torch::ScalarType dtype) {
  return torch::empty({numel}, torch::TensorOptions().dtype(dtype).pinned_memory(true));
}

struct HostStaging::Device {
  explicit Device(const torch::Device& d)
      : impl(d.type()), side(impl.getStreamFromGlobalPool(d, /*isHighPriority=*/false)) {}
  c10::impl::VirtualGuardImpl impl;
  c10::Stream side;  ///< the copies' stream, one per GPU
};

HostStaging::HostStaging(double timeout_seconds, StagingBuffers::Allocate allocate)
    : timeout_seconds_(timeout_seconds), buffers_(allocate), results_(std::move(allocate)) {}

HostStaging::~HostStaging() = default;

HostStaging::Device& HostStaging::device_state(const torch::Device& device) {
  auto& slot = devices_[device.index()];
  if (!slot) slot = std::make_unique<Device>(device);
  return *slot;
}

torch::Tensor HostStaging::to_host(const torch::Tensor& t) {
  if (t.device().is_cpu()) return t;
  Device& d = device_state(t.device());
  if (const ReadyMark* mark = current_ready_mark()) {
    mark->event.block(d.side);  // when `t` was ready on its caller's stream (comm/ready_mark.h)
  } else {
    const c10::Stream caller = d.impl.getStream(t.device());
    c10::Event ready(t.device().type());
    ready.record(caller);  // after the kernels that produced `t`
    ready.block(d.side);
  }
  torch::Tensor host = buffers_.view(t.sizes(), t.scalar_type());
  c10::Event copied(t.device().type());
  {
    const c10::StreamGuard on_side(d.side);
    host.copy_(t, /*non_blocking=*/true);
    copied.record(d.side);
  }
  ++staged_;
  // The host waits for this copy only (and the earlier ones on the side
  // stream: a copy back still reading this buffer); the rest of backward
  // keeps the GPU busy meanwhile.
  const bool done = poll_until([&] { return copied.query(); }, deadline_after(timeout_seconds_),
                               std::chrono::microseconds(20), std::chrono::microseconds(50),
                               deadline_after(timeout_seconds_), [] {});
  TNT_CHECK(done, "copying a tensor of ", t.numel(), " elements from ", t.device().str(),
            " to host memory did not finish within ", timeout_seconds_,
            " s (TNT_COMM_TIMEOUT): the GPU is hung or far behind; check nvidia-smi");
  return host;
}

void HostStaging::to_device(torch::Tensor& target, const torch::Tensor& host) {
  if (target.device().is_cpu()) {
    if (!target.is_same(host)) target.copy_(host);
    return;
  }
  copy_back(target, host, consumer_stream(target.device()));
}

void HostStaging::copy_back(torch::Tensor& target, const torch::Tensor& host,
                            const c10::Stream& caller) {
  Device& d = device_state(target.device());
  // `caller`: the stream that consumes the result, the caller's where the
  // engine thread runs this for it (comm/ready_mark.h). The side stream
  // orders after `target`'s last use on it (for a new tensor: the last use
  // of its memory, which the caching allocator hands out in that stream's
  // order), and it after the copy.
  c10::Event free(target.device().type());
  free.record(caller);
  free.block(d.side);
  c10::Event copied(target.device().type());
  {
    const c10::StreamGuard on_side(d.side);
    target.copy_(host, /*non_blocking=*/true);
    copied.record(d.side);
  }
  copied.block(caller);
}

torch::Tensor HostStaging::result_buffer(at::IntArrayRef sizes, const torch::Tensor& like) {
  if (like.device().is_cpu()) return torch::empty(sizes, like.options());
  return results_.view(sizes, like.scalar_type());
}

torch::Tensor HostStaging::result_to_device(const torch::Tensor& host,
                                            const torch::Device& device) {
  if (device.is_cpu()) return host;
  const c10::Stream caller = consumer_stream(device);
  torch::Tensor target;
  {
    // Allocated on the consumer's stream: the caching allocator frees it in
    // that stream's order, after the copy it waits for below.
    const c10::StreamGuard on_caller(caller);
    target = torch::empty(host.sizes(), host.options().device(device).pinned_memory(false));
  }
  if (host.numel() > 0) copy_back(target, host, caller);
  return target;
}

}  // namespace tnt::comm
