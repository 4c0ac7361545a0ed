// Private: the straggler report's measuring side (TNT_STRAGGLER_WINDOW).
//
// The fit loop hands it every training step's parts (StepSample): the time
// spent waiting for the micro-batch, the step's compute
// (StepTimes::compute(), train_step.h) and its wait in collectives, and the
// moment the step ended. The monitor measures the wall time from the end of
// the previous step (or from start(), at the beginning of an epoch's steps)
// to this one's end: what is not data, compute or wait in it is "callbacks
// and other" (the callbacks' batch begin and end, the loop, a read of the
// logs). Epoch boundaries (validation, epoch-end callbacks, the stop vote)
// are not measured.
//
// Windows. The first step of a fit is a warm-up (lazy initialisation, the
// allocator, the first batch): it is gathered alone, is not judged, and its
// time sizes the first window. Every further window has as many steps as
// fit into StragglerRules::window_seconds at the last window's slowest step
// time, at most `max_window` (TNT_STRAGGLER_WINDOW) steps: every rank holds
// the same gathered figures and computes the same length, so windows close
// on the same step everywhere without a further message. At the end of a
// window (collective) the ranks share their means in one allgather of 4
// float64 each over the engine's group; every rank then runs the same pure
// detector (train/observe/straggler.h), so they agree on whether a rank became a
// straggler. Only then is there one more collective, once per fit: the
// ranks' host names, for the report. The master logs the report as a
// WARNING; every rank adds its own figures to the timeline as a counter,
// and the fit loop passes the window to callbacks that listen
// (StepTimesListener: TensorBoard). The monitor's own time at the end of a
// window (the allgather, the report) is left out of the next step's figures.
// Between windows a step costs a clock read and four additions.
//
// With pipeline stages the monitor runs over the model's whole group (every
// stage of every replica), so that every rank holds every figure and the
// model's master, whatever its stage, logs the report with ranks named as
// the job numbers them; StragglerCohorts tells the detector to compare each
// rank with its stage's replicas only (straggler.h).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <tarantella/comm/process_group.h>
#include <tarantella/train/step_times.h>

#include "train/observe/straggler.h"

namespace tnt {
class Timeline;
}

namespace tnt::train {

/// One training step's parts as the fit loop measured them.
struct StepSample {
  using Clock = std::chrono::steady_clock;
  Clock::duration data{};     ///< waiting for the micro-batch
  Clock::duration compute{};  ///< forward, backward, optimizer, less the wait
  Clock::duration wait{};     ///< blocked in collectives
  Clock::time_point end;      ///< when the step ended
};

/// Which ranks of the monitor's group are compared with which, and what
/// each cohort is called in the report.
///
/// Example (2 stages, 2 replicas): {{0, 1, 0, 1}, {"stage 0 of 2", "stage 1 of 2"}}
struct StragglerCohorts {
  std::vector<int> of_rank;        ///< per rank of the group; empty: one cohort of all
  std::vector<std::string> names;  ///< per cohort
};

class StragglerMonitor {
 public:
  using Clock = std::chrono::steady_clock;

  /// `max_window` > 0 steps; `timeline` may be null. Not collective.
  StragglerMonitor(comm::ProcessGroup group, std::int64_t max_window, Timeline* timeline,
                   StragglerRules rules = StragglerRules(),
                   StragglerCohorts cohorts = StragglerCohorts());

  /// The next step's "other" time is measured from `at` (the beginning of
  /// an epoch's steps); without it, the first step after a pause has none.
  void start(Clock::time_point at);
  /// Adds one step. At the end of a window (collective over the group):
  /// every rank's means, after the report and the timeline counter; nothing
  /// after the warm-up step.
  std::optional<StepTimesWindow> record(const StepSample& step);
  /// Steps in the window now open.
  std::int64_t window_steps() const { return window_steps_; }

 private:
  StepTimesWindow gather();
  void report(const StepTimesWindow& w, const std::vector<StragglerReport>& reports);
  const std::vector<std::string>& hosts();

  comm::ProcessGroup group_;
  std::int64_t max_window_;
  Timeline* timeline_;
  StragglerRules rules_;
  StragglerCohorts cohorts_;
  StragglerTracker tracker_;
  std::int64_t steps_ = 0;         // of this fit
  std::int64_t window_steps_ = 1;  // the open window's length: 1 for the warm-up
  std::int64_t in_window_ = 0;     // steps recorded in it
  bool warmed_up_ = false;
  Clock::duration data_{}, compute_{}, other_{}, wait_{};  // this window, this rank
  std::optional<Clock::time_point> last_;                  // the previous step's end
  std::vector<std::string> hosts_;                         // gathered on first report
};

}  // namespace tnt::train
