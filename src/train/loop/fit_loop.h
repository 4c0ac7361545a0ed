// Private: fit as a loop in parts over a LoopContext (train/loop/loop_context.h),
// each of which tests can drive on the in-process backend:
//   begin()        checks, distribution of the dataset over the group, the
//                  initial broadcast, the tuner/timeline, the step strategy
//                  (chosen once), callbacks' train_begin and a resume point
//   run_epoch(e)   the steps of epoch e (run_step each), then end_epoch(e):
//                  buffers shared, validation, epoch_end, the stop vote
//   end()          train_end, the timeline written
// Accumulation is arithmetic on the step index (cycle_at in
// train_step.h), kept apart so that it can be checked without training;
// the step (train_step.h) owns the cycle's state.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <vector>

#include <tarantella/data/distribute.h>

#include "train/loop/callback_list.h"
#include "train/step/deterministic_step.h"
#include "train/loop/driver.h"
#include "train/loop/loop_context.h"
#include "train/observe/skipped_samples.h"
#include "train/observe/straggler_monitor.h"
#include "train/step/train_step.h"

namespace tnt::train {

class FitLoop {
 public:
  FitLoop(LoopContext context, const data::Dataset& train, const FitOptions& options,
          Driver driver);
  ~FitLoop();

  /// The whole fit: begin, the epochs until done or stopped, end.
  callbacks::History run();

  void begin();
  /// Runs epoch `epoch` (resuming mid-epoch if begin() found a position);
  /// false when training stops after it (every rank agrees).
  bool run_epoch(std::int64_t epoch);
  void end();
  /// The first epoch: the resume point's, else initial_epoch.
  std::int64_t first_epoch() const;
  std::int64_t steps_total() const { return steps_total_; }

 private:
  /// `data_epoch`: the epoch's data order (Counters::data_epochs).
  bool run_step(data::DistributedDataset::Iterator& it, std::int64_t epoch,
                std::int64_t data_epoch, std::int64_t step);
  /// A step that ends its accumulation cycle: logs, position, batch end.
  void end_batch(std::int64_t epoch, std::int64_t step, const StepResult& r);
  bool skip_empty_step(std::int64_t step);
  /// The next micro-batch: read ahead by cycle_steps_total, else the iterator's.
  std::optional<data::MicroBatch> next_batch(data::DistributedDataset::Iterator& it);
  /// The epoch's step count as far as the cycle starting at `step` needs it:
  /// with an unknown dataset size and accumulation, the cycle's batches are
  /// read ahead, so that one the epoch cuts short still reduces, averaged
  /// over its real length, instead of spilling into the next epoch.
  std::int64_t cycle_steps_total(data::DistributedDataset::Iterator& it, std::int64_t step);
  void end_epoch(std::int64_t epoch);
  bool stop_vote();

  LoopContext c_;
  const data::Dataset& train_;
  const FitOptions& options_;
  Driver driver_;
  std::optional<data::DistributedDataset> dist_;
  std::optional<SingleThreadScope> one_thread_;
  std::optional<DeterministicKernelsScope> deterministic_kernels_;
  std::unique_ptr<Step> step_;
  std::optional<StragglerMonitor> stragglers_;  // with a straggler window
  std::shared_ptr<callbacks::History> history_;
  std::optional<CallbackList> callbacks_;
  std::optional<TrainingPosition> resume_;
  SkippedSamples skipped_;
  std::int64_t steps_total_ = -1;
  std::deque<data::MicroBatch> ahead_;   // read ahead for the cycle (cycle_steps_total)
  std::optional<std::int64_t> epoch_end_;  // the step count, once the data ended
  /// The logs of the epoch's state so far (one host read, only when the
  /// state changed since the last).
  void refresh_logs();

  Logs logs_, local_logs_;
  torch::Tensor global_state_, local_state_;  // float64, on the training device
  bool logs_stale_ = false;
};

/// The whole fit (collective over context.group).
callbacks::History fit(LoopContext context, const data::Dataset& train, const FitOptions& options,
                       Driver driver);

}  // namespace tnt::train
