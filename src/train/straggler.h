// Private: the straggler detector, pure functions over every rank's mean
// times of one window (train/straggler_monitor.h gathers them).
//
// Note: a rank is a straggler when its *compute* (forward + backward +
// optimizer, without the time blocked in collectives) exceeds the median
// of the OTHER ranks' compute by more than the margin. Compute, not step
// time: in synchronous training every rank's step takes as long as the
// slowest one's, and the difference shows up as wait on the fast ranks, so
// the wait is what the others pay for the straggler ("they wait 32 ms per
// step for it"). The median of the others, not of all ranks: with 2 ranks
// the other rank is the reference, and with many a single slow rank cannot
// pull the reference towards itself. A rank must also be slower by a
// minimum absolute gap (default 1 ms per step), so that the jitter of
// sub-millisecond steps never reads as a straggler. Finally it must be
// slow in `windows` consecutive windows (default 2) before it is reported:
// a window's mean already smooths single slow steps, but one long pause
// (a page-in, a checkpoint written by another process on the host) can
// still lift one window's mean over the margin; a second window in a row
// means the cause persists. The report comes once when a rank becomes a
// straggler; it comes again only after the rank has recovered for a window.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <tarantella/base/arg.h>
#include <tarantella/train/step_times.h>

namespace tnt::train {

/// What counts as a straggler.
///
/// Example: StragglerRules().margin(0.5).windows(1)
struct StragglerRules {
  /// Slower than the others' median by more than this fraction (0.2 = 20 %).
  TNT_ARG(double, margin) = 0.2;
  /// ... and by at least this many milliseconds per step.
  TNT_ARG(double, min_gap_ms) = 1.0;
  /// ... in this many consecutive windows.
  TNT_ARG(int, windows) = 2;
};

/// A rank found slower than the others over one window.
struct Straggler {
  int rank = 0;
  double compute_ms = 0.0;         ///< its mean compute per step
  double others_compute_ms = 0.0;  ///< the median of the other ranks' compute
  double others_wait_ms = 0.0;     ///< the other ranks' mean wait per step
  double ratio() const { return compute_ms / others_compute_ms; }
};

/// The ranks slower than the median of the others' compute by the rules'
/// margin and gap over this one window, in rank order (none with fewer than
/// 2 ranks). The rules' `windows` is not applied here (StragglerTracker).
std::vector<Straggler> find_stragglers(const std::vector<RankStepTimes>& ranks,
                                       const StragglerRules& rules);

/// Applies the rules' persistence over consecutive windows.
class StragglerTracker {
 public:
  explicit StragglerTracker(StragglerRules rules) : rules_(rules) {}
  /// Judges one window: the stragglers to report now (slow for exactly the
  /// rules' number of consecutive windows), in rank order.
  std::vector<Straggler> judge(const std::vector<RankStepTimes>& ranks);

 private:
  StragglerRules rules_;
  std::vector<int> slow_for_;  // consecutive slow windows, per rank
};

/// The report: "rank 1 (host h1) is a straggler: its compute is 1.6x the
/// others' over the last 100 steps (85 ms vs 53 ms; they wait 32 ms per step
/// for it)". `host` may be empty (then no host is named).
std::string straggler_message(const Straggler& s, const std::string& host, std::int64_t steps);

}  // namespace tnt::train
