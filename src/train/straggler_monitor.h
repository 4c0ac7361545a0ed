// Private: the straggler report's measuring side (TNT_STRAGGLER_WINDOW).
//
// The fit loop hands it every training step's compute and wait (from the
// step's times, train_step.h: StepTimes::waited). Every `window` steps, on
// the same step on every rank since each rank counts the same steps, the
// ranks share their means in one allgather of 2 float64 each over the
// engine's group; every rank then holds the same figures and runs the same
// pure detector (train/straggler.h), so they agree without a further
// message on whether a rank became a straggler. Only then is there one more
// collective, once per fit: the ranks' host names, for the report. The
// master logs the report at INFO; every rank adds its own figures to the
// timeline as a counter, and the fit loop passes the window to callbacks
// that listen (StepTimesListener: TensorBoard). Between windows a step
// costs two additions.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <tarantella/comm/process_group.h>
#include <tarantella/train/step_times.h>

#include "train/straggler.h"

namespace tnt {
class Timeline;
}

namespace tnt::train {

class StragglerMonitor {
 public:
  using Clock = std::chrono::steady_clock;

  /// `window` > 0 steps; `timeline` may be null. Not collective.
  StragglerMonitor(comm::ProcessGroup group, std::int64_t window, Timeline* timeline,
                   StragglerRules rules = StragglerRules());

  /// Adds one step's times. At the end of a window (collective over the
  /// group): every rank's means, after the report and the timeline counter.
  std::optional<StepTimesWindow> record(Clock::duration compute, Clock::duration wait);

 private:
  StepTimesWindow gather() const;
  void report(const StepTimesWindow& w, const std::vector<Straggler>& stragglers);
  const std::vector<std::string>& hosts();

  comm::ProcessGroup group_;
  std::int64_t window_;
  Timeline* timeline_;
  StragglerTracker tracker_;
  std::int64_t steps_ = 0;              // of this fit
  Clock::duration compute_{}, wait_{};  // this window, this rank
  std::vector<std::string> hosts_;      // gathered on first report
};

}  // namespace tnt::train
