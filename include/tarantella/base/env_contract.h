// The contract between the `tarantella` launcher and the runtime: the
// environment variables the launcher exports and the runtime reads, their
// limits, and the thread rule both apply. One header, with no LibTorch and
// no MPI, so the launcher (which links neither) and Config share it and can
// never disagree about a name or a bound.
#pragma once

#include <algorithm>

namespace tnt::env {

inline constexpr const char kUseGpu[] = "TNT_USE_GPU";
inline constexpr const char kLogLevel[] = "TNT_LOG_LEVEL";
inline constexpr const char kLogOnAllDevices[] = "TNT_LOG_ON_ALL_DEVICES";
inline constexpr const char kOutputOnAllDevices[] = "TNT_OUTPUT_ON_ALL_DEVICES";
inline constexpr const char kTensorboardOnAllDevices[] = "TNT_TENSORBOARD_ON_ALL_DEVICES";
/// Gradient bucket size in KiB, 0..kMaxFusionThresholdKib.
inline constexpr const char kFusionThreshold[] = "TNT_FUSION_THRESHOLD";
inline constexpr long long kMaxFusionThresholdKib = 1LL << 30;
inline constexpr const char kCommTimeout[] = "TNT_COMM_TIMEOUT";
/// Which transport carries collectives: auto (default), mpi or nccl.
inline constexpr const char kCommBackend[] = "TNT_COMM_BACKEND";
/// Ranks per GPU, 1..kMaxRanksPerGpu: more than 1 when the launcher shares
/// GPUs on purpose (--ranks-per-gpu); a rank that shares its GPU otherwise
/// warns (docs/communication.md).
inline constexpr const char kRanksPerGpu[] = "TNT_RANKS_PER_GPU";
inline constexpr long long kMaxRanksPerGpu = 1000000;
inline constexpr const char kNumThreads[] = "TNT_NUM_THREADS";
inline constexpr const char kOverlap[] = "TNT_OVERLAP";
inline constexpr const char kOverlapOptimizer[] = "TNT_OVERLAP_OPTIMIZER";
inline constexpr const char kMallocTuning[] = "TNT_MALLOC_TUNING";
inline constexpr const char kTimeline[] = "TNT_TIMELINE";
inline constexpr const char kAutotune[] = "TNT_AUTOTUNE";
inline constexpr const char kAutotuneLog[] = "TNT_AUTOTUNE_LOG";
/// "false" (or 0): no stack service thread (docs/runtime.md).
inline constexpr const char kStackService[] = "TNT_STACK_SERVICE";
/// Steps per straggler window at most (0 = off; default 20, fewer for long
/// steps): every rank's mean data, compute, other and wait per step are
/// gathered once per window (docs/performance.md, "Straggler report").
inline constexpr const char kStragglerWindow[] = "TNT_STRAGGLER_WINDOW";
inline constexpr long long kMaxStragglerWindow = 1LL << 30;
/// "true" when the launcher's standard output is a terminal (and rank 0's
/// output goes there), "false" otherwise. Ranks' own stdout is always a pipe
/// under mpirun, so this is how the progress bar knows whether to redraw in
/// place or, like Keras's, print one line per epoch. Unset: the runtime asks
/// isatty() itself.
inline constexpr const char kStdoutIsTerminal[] = "TNT_STDOUT_IS_TERMINAL";

/// The thread rule: ranks on one node share its cores equally, at least one
/// thread each, unless the user set OMP_NUM_THREADS / TNT_NUM_THREADS.
/// Example: threads_per_rank(2, 2) == 1; threads_per_rank(2, 1) == 2.
constexpr int threads_per_rank(int cores_on_node, int ranks_on_node) {
  return std::max(1, cores_on_node / std::max(1, ranks_on_node));
}

}  // namespace tnt::env
