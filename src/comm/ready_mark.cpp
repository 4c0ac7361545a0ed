#include "comm/ready_mark.h"

#include <c10/core/Event.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>

namespace tnt::comm {
namespace {
thread_local const c10::Event* t_mark = nullptr;
}  // namespace

std::shared_ptr<c10::Event> ready_mark(const torch::Tensor& t) {
  if (!t.defined() || t.device().is_cpu()) return nullptr;
  const c10::Device device = t.device();
  const c10::Stream stream = c10::impl::getDeviceGuardImpl(device.type())->getStream(device);
  auto event = std::make_shared<c10::Event>(device.type());
  event->record(stream);
  return event;
}

ReadyMarkScope::ReadyMarkScope(const c10::Event* mark) : previous_(t_mark) { t_mark = mark; }
ReadyMarkScope::~ReadyMarkScope() { t_mark = previous_; }

const c10::Event* current_ready_mark() { return t_mark; }

}  // namespace tnt::comm
