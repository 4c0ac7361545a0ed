// Private: the device's own time for a training step's compute, on a GPU,
// for the straggler report (train/observe/straggler_monitor.h).
//
// Why: a step on a GPU does not synchronise with the host, so host clocks
// see the time spent launching work, not the time the device spends on it;
// a rank whose GPU is slow would look as fast as the others. So the step
// records CUDA events (with timing) on the training stream at four points
// and reads them a step or more later, once they have completed
// (Event::query, no waiting): the compute is forward begin to backward end
// plus sync end to step end, the stretch between being the wait for the
// gradients. The figure therefore lags by the one or two steps the host runs
// ahead. On the CPU, or with a LibTorch before 2.0 (no elapsed time on
// c10::Event), nothing is recorded and the host clock stands.
#pragma once

#include <c10/core/Device.h>
#include <c10/core/Event.h>

#include <array>
#include <chrono>
#include <deque>
#include <memory>
#include <optional>
#include <vector>

namespace tnt::train {

class DeviceStepClock {
 public:
  enum Point { kForwardBegin, kBackwardEnd, kSyncEnd, kStepEnd, kPoints };

  explicit DeviceStepClock(c10::Device device);
  ~DeviceStepClock();
  DeviceStepClock(const DeviceStepClock&) = delete;
  DeviceStepClock& operator=(const DeviceStepClock&) = delete;

  /// Whether it times anything (a CUDA device, a LibTorch with event timing).
  bool enabled() const { return enabled_; }
  /// Records point `p` of the current step on the device's current stream.
  void mark(Point p);
  /// Closes the current step. Returns the device compute of the latest step
  /// whose events have completed (or the last one known when none completed
  /// since); nullopt before any completed, or when not enabled.
  std::optional<std::chrono::nanoseconds> end_step();

 private:
  using Marks = std::array<std::shared_ptr<c10::Event>, kPoints>;
  c10::Device device_;
  bool enabled_ = false;
  Marks current_;
  std::array<bool, kPoints> recorded_{};  // this step's points recorded so far
  std::deque<Marks> pending_;  // oldest first; at most kMaxPending
  std::vector<Marks> spare_;   // read, to be recorded again

  std::optional<std::chrono::nanoseconds> last_;
};

}  // namespace tnt::train
