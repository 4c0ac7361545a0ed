// The device's own compute time of a step, from events (see device_clock.h).
#include "train/observe/device_clock.h"

#include <utility>

#include <c10/core/impl/DeviceGuardImplInterface.h>

#include <tarantella/base/torch_compat.h>

namespace tnt::train {
namespace {

// Steps whose events wait to be read: the host runs at most a few steps
// ahead; older marks are dropped rather than kept without bound.
constexpr std::size_t kMaxPending = 8;

}  // namespace

DeviceStepClock::DeviceStepClock(c10::Device device)
    : device_(device), enabled_(compat::kEventTiming && device.is_cuda()) {}

DeviceStepClock::~DeviceStepClock() = default;

void DeviceStepClock::mark(Point p) {
  if (!enabled_) return;
  const c10::Stream stream =
      c10::impl::getDeviceGuardImpl(device_.type())->getStream(device_);
  // A completed step's events are recorded again rather than made anew:
  // no event is created or destroyed per step once the pool is warm.
  if (p == kForwardBegin && !spare_.empty()) {
    current_ = std::move(spare_.back());
    spare_.pop_back();
  }
  auto& event = current_[static_cast<std::size_t>(p)];
  if (!event) event = std::make_shared<c10::Event>(device_.type(), c10::EventFlag::BACKEND_DEFAULT);
  event->record(stream);
  recorded_[static_cast<std::size_t>(p)] = true;
}

std::optional<std::chrono::nanoseconds> DeviceStepClock::end_step() {
  if (!enabled_) return std::nullopt;
  bool whole = true;
  for (bool r : recorded_) whole = whole && r;
  recorded_ = {};
  if (whole) pending_.push_back(std::exchange(current_, Marks{}));
  if (pending_.size() > kMaxPending) pending_.pop_front();
  while (!pending_.empty() && pending_.front()[kStepEnd]->query()) {
    const Marks& m = pending_.front();
    const double ms = compat::event_elapsed_ms(*m[kForwardBegin], *m[kBackwardEnd]) +
                      compat::event_elapsed_ms(*m[kSyncEnd], *m[kStepEnd]);
    last_ = std::chrono::nanoseconds(static_cast<std::int64_t>(ms * 1e6));
    spare_.push_back(std::move(pending_.front()));
    pending_.pop_front();
  }
  return last_;
}

}  // namespace tnt::train
