// The device's own compute time of a step, from events (see device_clock.h).
#include "train/device_clock.h"

#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <torch/version.h>

namespace tnt::train {
namespace {

// Steps whose events wait to be read: the host runs at most a few steps
// ahead; older marks are dropped rather than kept without bound.
constexpr std::size_t kMaxPending = 8;

#if TORCH_VERSION_MAJOR >= 2
constexpr bool kEventTiming = true;
double elapsed_ms(const c10::Event& from, const c10::Event& to) { return from.elapsedTime(to); }
#else
constexpr bool kEventTiming = false;
double elapsed_ms(const c10::Event&, const c10::Event&) { return 0; }
#endif

}  // namespace

DeviceStepClock::DeviceStepClock(c10::Device device)
    : device_(device), enabled_(kEventTiming && device.is_cuda()) {}

DeviceStepClock::~DeviceStepClock() = default;

void DeviceStepClock::mark(Point p) {
  if (!enabled_) return;
  const c10::Stream stream =
      c10::impl::getDeviceGuardImpl(device_.type())->getStream(device_);
  auto event = std::make_shared<c10::Event>(device_.type(), c10::EventFlag::BACKEND_DEFAULT);
  event->record(stream);
  current_[static_cast<std::size_t>(p)] = std::move(event);
}

std::optional<std::chrono::nanoseconds> DeviceStepClock::end_step() {
  if (!enabled_) return std::nullopt;
  bool whole = true;
  for (const auto& e : current_) whole = whole && e != nullptr;
  if (whole) pending_.push_back(current_);
  current_ = Marks{};
  if (pending_.size() > kMaxPending) pending_.pop_front();
  while (!pending_.empty() && pending_.front()[kStepEnd]->query()) {
    const Marks& m = pending_.front();
    const double ms = elapsed_ms(*m[kForwardBegin], *m[kBackwardEnd]) +
                      elapsed_ms(*m[kSyncEnd], *m[kStepEnd]);
    last_ = std::chrono::nanoseconds(static_cast<std::int64_t>(ms * 1e6));
    pending_.pop_front();
  }
  return last_;
}

}  // namespace tnt::train
