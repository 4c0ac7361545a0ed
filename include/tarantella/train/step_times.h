// What the straggler report measures, for whoever wants the figures beyond
// the log line: every rank's mean time per training step over one window
// (docs/performance.md, "Straggler report"), split into the parts outside
// collectives (data, compute, callbacks and other) and the wait in them. A
// callback that also derives from StepTimesListener receives them after each
// window on the ranks where it runs; the TensorBoard callback writes them as
// per-rank scalars.
#pragma once

#include <cstdint>
#include <vector>

namespace tnt::train {

/// One rank's mean times per training step over a window, in milliseconds.
/// The four parts add up to the rank's wall time per step (from one step's
/// end to the next's).
struct RankStepTimes {
  /// Waiting for the next micro-batch from the input pipeline.
  double data_ms = 0.0;
  /// Forward, backward and the optimizer step, less the time blocked in
  /// collectives. Host clock: on a GPU, what the host spends launching the
  /// work (docs/performance.md).
  double compute_ms = 0.0;
  /// Everything else outside collectives: callbacks (the progress bar,
  /// TensorBoard, your own), the loop itself, a host read of the logs.
  double other_ms = 0.0;
  /// Blocked in the step's collectives (the gradient allreduce, a sharded
  /// step's gather, deterministic mode's exact sum): long on the ranks that
  /// wait for a slower one.
  double wait_ms = 0.0;

  /// The time outside collectives: what the others wait for when it is
  /// longer than theirs.
  double outside_ms() const { return data_ms + compute_ms + other_ms; }
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
