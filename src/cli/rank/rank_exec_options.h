// The hidden command line between the launcher and its per-rank wrapper.
//
// mpirun starts `tarantella --rank-exec [flags] -- command...` on every rank.
// The flags are written by to_arguments() on the launching node and read by
// parse_rank_exec() on each rank; both live here so the two sides cannot
// drift apart (a round trip is unit-tested).
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace tnt::cli {

/// The first argument that selects the wrapper mode.
inline constexpr const char* kRankExecFlag = "--rank-exec";

/// What the wrapper does around the user's command on each rank.
struct RankExecOptions {
  /// Prefix every rank's stdout lines with "[R] "; otherwise only rank 0's stdout is kept.
  bool output_on_all_devices = false;
  /// Compute OMP_NUM_THREADS with the thread rule; false keeps the user's value.
  bool set_omp_threads = true;
  bool pin_cpu = false;     ///< numactl --cpunodebind
  bool pin_memory = false;  ///< numactl --membind
  /// CUDA_VISIBLE_DEVICES= for the program: the job trains on the CPU
  /// (--no-gpu, -x TNT_USE_GPU=false), so the program's own device lines
  /// (`torch.cuda.is_available()`) choose the CPU too. Set on the rank's
  /// host, after srun or Slurm may have set a task's GPUs.
  bool hide_gpus = false;
  /// --output-filename, absolute: also copy stdout and stderr to DIR/rank.N/.
  std::optional<std::string> output_directory;
  bool operator==(const RankExecOptions& o) const {
    return output_on_all_devices == o.output_on_all_devices &&
           set_omp_threads == o.set_omp_threads && pin_cpu == o.pin_cpu &&
           pin_memory == o.pin_memory && hide_gpus == o.hide_gpus &&
           output_directory == o.output_directory;
  }
};

/// The wrapper's options and the command it runs.
struct RankExecCommand {
  RankExecOptions options;
  std::vector<std::string> command;
};

/// {"--rank-exec", flags..., "--"}: the caller appends the command.
std::vector<std::string> to_arguments(const RankExecOptions& options);

/// Parses the arguments after argv[0], starting with "--rank-exec". Throws
/// LauncherError on anything else, since only the launcher writes them.
RankExecCommand parse_rank_exec(const std::vector<std::string>& args);

}  // namespace tnt::cli
