// Private: auto-tuning of the gradient engine (TNT_AUTOTUNE / the launcher's
// --autotune), after Horovod's autotune and Determined's
// auto_tune_tensor_fusion: the fusion threshold and overlap on/off, chosen
// on the running job.
//
// How the search goes. During the first optimizer steps of training, each
// setting of a plan is used for a trial of `warmup + measured` steps; the
// slowest rank's time of each measured step (one allreduce(max) per trial)
// is taken, and the trial's median step decides. Two phases:
//
//   1. overlap: the configured threshold with overlap on, then off; the
//      faster one fixes overlap for the rest of the run. Skipped when the
//      user set TNT_OVERLAP (their choice is kept).
//   2. threshold: every candidate threshold with that overlap. The setting
//      kept is the fastest trial of that overlap (phase 1's included, so
//      the configured threshold is always a candidate).
//
// Why overlap first: it is the structural choice (on hosts whose network
// work shares the training core, overlapping loses; elsewhere it wins),
// and the best threshold depends on it (without overlap only the number of
// calls matters; with it, also how early the first bucket leaves). Deciding
// it at one threshold costs two trials; the full grid would cost twice the
// thresholds. The piece size of large allreduces (4 MiB, comm/chunks.h)
// is not tuned: it is tied to the TCP eager limit set at MPI_Init, and a
// larger piece would cross it mid-job.
//
// Every rank follows the same plan (checked at construction) and decides
// from the same allreduced times, so every rank picks the same setting.
// Neither choice changes the numbers at 2 ranks: overlap only moves when a
// bucket's allreduce starts, and a + b is exact whatever the bucketing. At
// 3+ ranks the threshold moves bucket boundaries, and with them MPI's
// per-element summation order (rounding-level differences; deterministic
// training does not tune). The choice and every trial are logged (INFO)
// and, with TNT_AUTOTUNE_LOG, written as CSV by the master.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include <tarantella/base/arg.h>
#include <tarantella/train/engine_options.h>
#include <tarantella/comm/process_group.h>

namespace tnt {

/// One configuration of the gradient engine.
struct EngineSetting {
  std::size_t threshold_bytes = 32 * 1024;
  bool overlap = true;
  bool operator==(const EngineSetting& o) const {
    return threshold_bytes == o.threshold_bytes && overlap == o.overlap;
  }
  bool operator!=(const EngineSetting& o) const { return !(*this == o); }
};

/// The thresholds tried by default: 0 (one allreduce per tensor), 16 KiB ...
/// 16 MiB in factors of 4.
std::vector<std::size_t> default_autotune_thresholds();

/// What an AutoTuner searches and how long each trial is.
///
/// Example:
///   tnt::AutoTuneOptions().start({64 << 10, true}).tune_overlap(false).measured_steps(8)
struct AutoTuneOptions {
  /// From the engine's switches (overlap, whether the user set it, the
  /// log) and the threshold in effect.
  static AutoTuneOptions from_engine(const train::EngineOptions& options,
                                     std::size_t configured_threshold);

  TNT_ARG(std::vector<std::size_t>, thresholds) = default_autotune_thresholds();
  /// The configured setting: phase 1 decides overlap at its threshold.
  TNT_ARG(EngineSetting, start);
  /// false: overlap stays start().overlap (the user set TNT_OVERLAP).
  TNT_ARG(bool, tune_overlap) = true;
  TNT_ARG(int, warmup_steps) = 1;
  TNT_ARG(int, measured_steps) = 4;
  /// Where the master writes the trials as CSV; empty: nowhere.
  TNT_ARG(std::string, log_path);
};

class AutoTuner {
 public:
  /// Trials agree over `group` (the model's ranks). Collective: checks that
  /// every rank has the same plan.
  AutoTuner(comm::ProcessGroup group, AutoTuneOptions options);

  /// The setting for the next step.
  EngineSetting setting() const;
  /// After an optimizer step that took `seconds` on this rank. Collective
  /// (every rank calls it for every step while tuning). Returns true when
  /// the setting for the next step differs from this one.
  bool record(double seconds);
  bool done() const { return done_; }
  /// Optimizer steps spent tuning so far (all of them once done()).
  int steps() const { return steps_; }

 private:
  struct Trial {
    EngineSetting setting;
    double step_s;  // median over the measured steps of the slowest rank's time
  };
  void finish_trial();
  void plan_thresholds(bool overlap);
  void choose();
  void write_log() const;

  comm::ProcessGroup group_;
  AutoTuneOptions options_;
  std::vector<EngineSetting> plan_;  // the trials still to run, next first
  std::vector<Trial> trials_;        // the trials run, in order
  std::vector<double> measured_s_;   // this rank's measured steps of this trial
  int step_in_trial_ = 0;
  int steps_ = 0;
  bool overlap_phase_ = false;
  EngineSetting chosen_;
  bool done_ = false;
};

}  // namespace tnt
