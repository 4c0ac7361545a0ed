// The training engine's switches, given explicitly by each front end: the
// engine itself reads no environment variable. Defaults are the documented
// ones; from_config() takes a run's resolved TNT_* configuration (what the
// launcher's flags set), which is what the facades pass.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include <tarantella/base/arg.h>
#include <tarantella/base/config.h>

namespace tnt::train {

/// Example:
///   auto options = tnt::train::EngineOptions::from_config(tnt::config()).overlap(false);
struct EngineOptions {
  /// Gradient bucket size; CompileOptions().fusion_threshold_bytes wins.
  TNT_ARG(std::size_t, fusion_threshold_bytes) = 32 * 1024;
  /// Start each bucket's allreduce during backward (false: after it).
  TNT_ARG(bool, overlap) = true;
  /// Whether overlap was chosen by the user: auto-tuning then keeps it.
  TNT_ARG(bool, overlap_set) = false;
  /// Step each bucket's parameters as soon as its allreduce is done
  /// (element-wise optimizers without clipping or loss scaling).
  TNT_ARG(bool, overlap_optimizer) = false;
  /// Choose the fusion threshold and overlap by measuring the first steps.
  TNT_ARG(bool, autotune) = false;
  /// The auto-tuning trials as CSV (master rank); empty: none.
  TNT_ARG(std::string, autotune_log_path);
  /// A Chrome-trace timeline of every rank's steps; empty: none.
  TNT_ARG(std::string, timeline_path);
  /// Training steps per straggler window (train/observe/straggler_monitor.h); 0: off.
  TNT_ARG(std::int64_t, straggler_window) = 20;
  /// false forces the CPU; unset: a GPU when LibTorch has one.
  TNT_ARG(std::optional<bool>, use_gpu);
  /// Progress output on every rank, not only the master.
  TNT_ARG(bool, output_on_all_ranks) = false;
  /// Whether the user's output is a terminal (the progress bar redraws in
  /// place); unset: ask isatty().
  TNT_ARG(std::optional<bool>, stdout_is_terminal);


 public:
  static EngineOptions from_config(const Config& config);
};

}  // namespace tnt::train
