// Private: fusion-threshold auto-tuning (TNT_AUTOTUNE / the launcher's
// --autotune), after Horovod's autotune and Determined's
// auto_tune_tensor_fusion.
//
// During the first optimizer steps of training, each candidate threshold is
// used for a trial of `warmup + measured` steps; the measured steps' time
// (the slowest rank's, agreed by one allreduce per trial) decides, and the
// fastest threshold is kept for the rest of the run. The gradients are the
// same sums whatever the bucketing, so the model's numbers do not depend on
// the choice. The choice is logged (INFO) and, with TNT_AUTOTUNE_LOG, every
// trial is written to a CSV file by the master.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include <tarantella/comm/process_group.h>

namespace tnt {

class AutoTuner {
 public:
  /// Trials agree over `group` (the model's ranks).
  AutoTuner(comm::ProcessGroup group, std::vector<std::size_t> candidates, int warmup_steps,
            int measured_steps, std::string log_path);
  /// The candidates used by default: 0 (one allreduce per tensor), 16 KiB ...
  /// 16 MiB in factors of 4.
  static std::vector<std::size_t> default_candidates();

  /// The threshold for the next step.
  std::size_t threshold() const;
  /// After an optimizer step that took `seconds` on this rank. Collective
  /// (every rank calls it for every step while tuning). Returns true when
  /// the threshold for the next step differs from this one.
  bool record(double seconds);

 private:
  comm::ProcessGroup group_;
  std::vector<std::size_t> candidates_;
  int warmup_, measured_;
  std::string log_path_;
  std::size_t index_ = 0;
  int step_in_trial_ = 0;
  double elapsed_ = 0.0;
  std::vector<double> mean_step_s_;  // per finished trial
  std::size_t chosen_ = 0;
  bool done_ = false;
};

}  // namespace tnt
