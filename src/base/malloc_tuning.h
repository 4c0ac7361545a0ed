// Private: glibc malloc settings for a training process.
//
// LibTorch's CPU tensors come from malloc. glibc serves blocks above its
// mmap threshold (128 KiB at first, raised as such blocks are freed, up to
// 32 MiB) with fresh mmap()ed pages, and gives the heap's free top back to
// the kernel above its trim threshold: a training step that allocates and
// frees the same activations every step can then fault every page in again,
// every step. Which way a process goes depends on the order of its first
// allocations, so the same job ran either at full speed or up to 40 % slower
// for its whole life (LeNet-5 at 1 rank: 90k page faults in 120 steps, or
// 270k-690k; docs/perf-log/2026-11-train-step.md). Fixed thresholds (mmap above 32 MiB,
// keep up to 128 MiB of free heap top) make every run the fast one, at the
// cost of holding up to that much freed memory per malloc arena.
#pragma once

#include <functional>
#include <optional>
#include <string>

namespace tnt::detail {

/// glibc's own variables for these settings (and TNT_MALLOC_TUNING=false)
/// leave malloc as it is.
inline constexpr const char* kGlibcMallocVariables[] = {
    "MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_TOP_PAD_", "MALLOC_MMAP_MAX_"};

inline constexpr std::size_t kMmapThreshold = 32u << 20;   // glibc's maximum
inline constexpr std::size_t kTrimThreshold = 128u << 20;

/// glibc's mallopt(), or a stand-in (tests): returns 1 on success.
using MalloptFn = std::function<int(int param, int value)>;

/// Sets the thresholds with `set` (default: glibc's mallopt) unless
/// `enabled` is false or `lookup` finds one of kGlibcMallocVariables set
/// (the user's choice wins). Returns what it did, for the log.
std::string tune_malloc(bool enabled,
                        const std::function<std::optional<std::string>(const char*)>& lookup,
                        const MalloptFn& set = nullptr);

}  // namespace tnt::detail
