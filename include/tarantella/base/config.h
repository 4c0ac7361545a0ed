// All TNT_* configuration of a run, resolved once from the environment into
// one immutable value. The launcher only sets environment variables; this is
// the single place that reads and validates them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace tnt {

enum class LogLevel { Debug = 0, Info = 1, Warning = 2, Error = 3 };

/// The transport of the world group's collectives (TNT_COMM_BACKEND). Auto:
/// NCCL when the model is on CUDA, the build has NCCL and no two ranks use
/// the same GPU (told apart by host and PCI bus id); else MPI.
enum class CommBackend { Auto, Mpi, Nccl };

/// The resolved configuration. Build it with Config::from_env(); the running
/// runtime's copy is tnt::config().
///
/// Example:
///   auto cfg = tnt::Config::from_env();
///   std::cout << cfg.fusion_threshold_bytes;
struct Config {
  /// TNT_LOG_LEVEL: DEBUG, INFO, WARNING or ERROR (default WARNING).
  LogLevel log_level = LogLevel::Warning;
  /// TNT_LOG_ON_ALL_DEVICES: log on every rank, not only the master rank.
  bool log_on_all_devices = false;
  /// TNT_OUTPUT_ON_ALL_DEVICES: progress bars and other output on every rank.
  bool output_on_all_devices = false;
  /// TNT_TENSORBOARD_ON_ALL_DEVICES: TensorBoard event files on every rank.
  bool tensorboard_on_all_devices = false;
  /// TNT_FUSION_THRESHOLD in KiB (default 32 KiB); 0 = one allreduce per tensor.
  std::size_t fusion_threshold_bytes = 32 * 1024;
  /// TNT_COMM_TIMEOUT in seconds (default 300): how long a collective waits
  /// for every rank to arrive before it fails naming the missing ranks.
  double comm_timeout_seconds = 300.0;
  /// TNT_COMM_BACKEND: auto (default), mpi or nccl (docs/communication.md).
  CommBackend comm_backend = CommBackend::Auto;
  /// TNT_NUM_THREADS, else OMP_NUM_THREADS: LibTorch intra-op threads of this
  /// rank. Unset: cores of the node divided by ranks on the node, at least 1.
  std::optional<int> num_threads;
  /// TNT_USE_GPU: true demands a GPU (an error where LibTorch has none),
  /// false forces the CPU; unset or "auto" means "use a GPU when LibTorch
  /// has one" (what the launcher exports when it found GPUs).
  std::optional<bool> use_gpu;
  /// TNT_OVERLAP (default true): start each bucket's allreduce during
  /// backward; false waits until backward has finished (for comparisons).
  bool overlap = true;
  /// TNT_OVERLAP_OPTIMIZER (default false): with an element-wise optimizer
  /// (SGD, Adam, AdamW, RMSprop, Adagrad) and no clip_norm, clip_value or
  /// loss scaling, step each bucket's parameters as soon as its allreduce is
  /// done, while later buckets are still on the wire. The same results
  /// bitwise. Off by default: with one core per rank and the exchange done
  /// by CPU copies it was slower (docs/performance.md); a sharded optimizer
  /// always steps bucket by bucket.
  bool overlap_optimizer = false;
  /// TNT_MALLOC_TUNING (default true): at start-up, fix glibc malloc's
  /// thresholds (mmap above 32 MiB, keep up to 128 MiB of free heap) so
  /// that a training step does not fault its activations' pages in again
  /// every step; skipped when MALLOC_MMAP_THRESHOLD_, MALLOC_TRIM_THRESHOLD_,
  /// MALLOC_TOP_PAD_ or MALLOC_MMAP_MAX_ is set (docs/runtime.md).
  bool malloc_tuning = true;
  /// TNT_STACK_SERVICE (default true): each rank runs the thread that tells
  /// a timed-out collective's reporters where this rank is stuck (its stack;
  /// comm/check/stack_service.h). false: no such thread; a report then names the
  /// missing rank without its stack.
  bool stack_service = true;
  /// Whether TNT_OVERLAP was set: auto-tuning then keeps it instead of
  /// trying both.
  bool overlap_set = false;
  /// TNT_TIMELINE: write a Chrome-trace / Perfetto JSON timeline of every
  /// rank's steps to this file (launcher: --timeline FILE). Empty: none.
  std::string timeline_path;
  /// TNT_AUTOTUNE: pick the fusion threshold and overlap on/off by measuring
  /// the first steps of training (launcher: --autotune).
  bool autotune = false;
  /// TNT_AUTOTUNE_LOG: also write the auto-tuning trials to this file (CSV).
  std::string autotune_log_path;
  /// TNT_STRAGGLER_WINDOW (default 20; 0 = off): the longest straggler
  /// window in training steps (a window also ends after about 10 s). Once per
  /// window the ranks share their mean data, compute, other and wait per
  /// step (one small allgather), and the master warns of a rank whose time
  /// outside collectives is persistently longer than the others'
  /// (docs/performance.md, "Straggler report").
  std::int64_t straggler_window = 20;
  /// TNT_RANKS_PER_GPU (set by the launcher's --ranks-per-gpu; default 1):
  /// more than 1 says GPUs are shared on purpose, so a rank that shares its
  /// GPU does not warn about it.
  int ranks_per_gpu = 1;
  /// TNT_STDOUT_IS_TERMINAL (set by the launcher): whether the output the
  /// user reads is a terminal. Unset: the progress bar asks isatty().
  std::optional<bool> stdout_is_terminal;

  /// Reads the variables through `lookup` (returns nullopt for unset ones).
  /// A malformed value throws tnt::Error naming the variable and the value.
  static Config from_lookup(
      const std::function<std::optional<std::string>(const std::string&)>& lookup);
  /// Reads the process environment.
  static Config from_env();
};

/// Text name of a level ("DEBUG", ...).
const char* to_string(LogLevel level);
/// "auto", "mpi" or "nccl".
const char* to_string(CommBackend backend);

}  // namespace tnt
