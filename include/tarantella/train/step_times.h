// What the straggler report measures, for whoever wants the figures beyond
// the log line: every rank's mean compute and wait per training step over
// one window of TNT_STRAGGLER_WINDOW steps (docs/performance.md, "Straggler report"). A callback
// that also derives from StepTimesListener receives them after each window
// on the ranks where it runs; the TensorBoard callback writes them as
// per-rank scalars.
#pragma once

#include <cstdint>
#include <vector>

namespace tnt::train {

/// One rank's mean times per training step over a window, in milliseconds.
struct RankStepTimes {
  /// Forward, backward and the optimizer step, less the time blocked in
  /// collectives (waiting for data is not part of it).
  double compute_ms = 0.0;
  /// Blocked waiting for the gradient allreduce (and the step's other
  /// collectives): long on the ranks that wait for a slower one.
  double wait_ms = 0.0;
};

/// Every rank's figures after one window (the same on every rank).
struct StepTimesWindow {
  /// Training steps of this fit() done when the window closed.
  std::int64_t step = 0;
  /// Steps the means are over.
  std::int64_t steps = 0;
  /// Indexed by rank of the model's group.
  std::vector<RankStepTimes> ranks;
};

/// Mix-in for callbacks that want each window's figures.
///
/// Example:
///   struct Slowest : tnt::callbacks::Callback, tnt::train::StepTimesListener {
///     void on_step_times(const tnt::train::StepTimesWindow& w) override { ... }
///   };
class StepTimesListener {
 public:
  virtual ~StepTimesListener() = default;
  virtual void on_step_times(const StepTimesWindow& window) = 0;
};

}  // namespace tnt::train
