#include "comm/ready_mark.h"

#include <c10/core/Event.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>

namespace tnt::comm {
namespace {
thread_local const ReadyMark* t_mark = nullptr;
}  // namespace

std::shared_ptr<ReadyMark> ready_mark(const torch::Tensor& t) {
  if (!t.defined() || t.device().is_cpu()) return nullptr;
  const c10::Device device = t.device();
  const c10::Stream stream = c10::impl::getDeviceGuardImpl(device.type())->getStream(device);
  auto mark = std::make_shared<ReadyMark>(ReadyMark{c10::Event(device.type()), stream});
  mark->event.record(stream);
  return mark;
}

ReadyMarkScope::ReadyMarkScope(const ReadyMark* mark) : previous_(t_mark) { t_mark = mark; }
ReadyMarkScope::~ReadyMarkScope() { t_mark = previous_; }

const ReadyMark* current_ready_mark() { return t_mark; }

c10::Stream consumer_stream(const c10::Device& device) {
  if (t_mark != nullptr && t_mark->stream.device() == device) return t_mark->stream;
  return c10::impl::getDeviceGuardImpl(device.type())->getStream(device);
}

}  // namespace tnt::comm
