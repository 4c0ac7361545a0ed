// Private: the straggler detector, pure functions over every rank's mean
// times of one window (train/observe/straggler_monitor.h gathers them).
//
// Note: a rank is a straggler when its time *outside collectives* (waiting
// for data, compute, callbacks and other: RankStepTimes::outside_ms)
// exceeds the median of the OTHER ranks' by more than the margin. Outside
// collectives, not step time: in synchronous training every rank's step
// takes as long as the slowest one's, and the difference shows up as wait
// in the collectives on the fast ranks, so the wait is what the others pay
// for the straggler ("the others wait 40 ms per step for it"). Not compute
// alone either: a rank slowed by its input pipeline or by a callback makes
// the others wait just the same, and a rank that only waits must never be
// named, which a compute-only figure cannot promise (a rank that waits in a
// collective inside a forward pass, or whose host is briefly busy, can show
// more compute than the one it waits for). The median of the others, not of
// all ranks: with 2 ranks the other rank is the reference, and with many a
// single slow rank cannot pull the reference towards itself. A rank must
// also be slower by a minimum absolute gap (default 5 ms per step), so that
// the jitter of sub-millisecond steps never reads as a straggler. Finally
// it must be slow in `windows` consecutive windows (default 2) before it is
// reported: a window's mean already smooths single slow steps, but one long
// pause (a page-in, a checkpoint written by another process on the host)
// can still lift one window's mean over the margin; a second window in a
// row means the cause persists.
//
// The report names the leading cause: of data, compute and "callbacks and
// other", the part by which the rank exceeds the others' median most. A rank
// is named once; it is named again only when its leading cause changes (the
// new cause leading in `windows` consecutive windows, so that two causes of
// similar size do not alternate in the log), or when another rank was named
// in between and it becomes a straggler again.
//
// Windows are short and sized by time (next_window_steps): the report comes
// within the first 2 windows of a fit in which a rank is persistently slow.
//
// Pipeline stages. The ranks of a pipelined model do different work: a
// stage of heavier layers is slower than a light one however healthy both
// are. So a rank is compared only with the ranks of its *cohort*, its
// stage's replicas (the cohorts argument; none given: one cohort of every
// rank), and "the others" are the rest of that cohort. A rank alone in its
// cohort (one replica) has no reference and is never named. The time a
// stage waits on its neighbour stages is wait, not "outside collectives"
// (the step counts it so: train/step/train_step.h), so that the stage after
// a slow one is not named for waiting on it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <tarantella/base/arg.h>
#include <tarantella/train/step_times.h>

namespace tnt::train {

/// What counts as a straggler, and how long a window is.
///
/// Example: StragglerRules().margin(0.5).windows(1)
struct StragglerRules {
  /// Slower than the others' median by more than this fraction (0.2 = 20 %).
  TNT_ARG(double, margin) = 0.2;
  /// ... and by at least this many milliseconds per step: less is not worth
  /// a warning (2 ranks of the README's LeNet-5 on 2 cores differ by ~2 ms
  /// of 7 ms steps from core placement alone).
  TNT_ARG(double, min_gap_ms) = 5.0;
  /// ... in this many consecutive windows.
  TNT_ARG(int, windows) = 2;
  /// A window lasts about this long at most: the next one has as many steps
  /// as fit into it at the last window's slowest step time (at least 1, at
  /// most the window in steps, TNT_STRAGGLER_WINDOW).
  TNT_ARG(double, window_seconds) = 10.0;
};

/// Where a straggler loses its time: the part of its time outside
/// collectives that exceeds the others' most.
enum class StragglerCause { kData, kCompute, kOther };

/// "data", "compute", "callbacks and other".
const char* cause_name(StragglerCause cause);

/// A rank found slower than the others of its cohort over one window.
struct Straggler {
  int rank = 0;
  RankStepTimes times;             ///< its means per step
  double others_outside_ms = 0.0;  ///< the median of the others' time outside collectives
  double others_wait_ms = 0.0;     ///< the other ranks' mean wait per step
  StragglerCause cause = StragglerCause::kCompute;
  double ratio() const { return times.outside_ms() / others_outside_ms; }
};

/// The ranks slower than the median of the others' time outside collectives
/// by the rules' margin and gap over this one window, in rank order (none
/// with fewer than 2 ranks). `cohorts` (one entry per rank, or empty: all
/// ranks are one cohort): a rank is compared with the other ranks of its
/// cohort only (a pipeline stage's replicas). The rules' `windows` is not
/// applied here (StragglerTracker).
std::vector<Straggler> find_stragglers(const std::vector<RankStepTimes>& ranks,
                                       const StragglerRules& rules,
                                       const std::vector<int>& cohorts = {});

/// A straggler to report, and whether it was named before with another cause.
struct StragglerReport {
  Straggler straggler;
  bool cause_changed = false;
};

/// Applies the rules' persistence over consecutive windows and decides what
/// is said again (see the note above).
class StragglerTracker {
 public:
  /// `cohorts`: as find_stragglers takes them.
  explicit StragglerTracker(StragglerRules rules, std::vector<int> cohorts = {})
      : rules_(rules), cohorts_(std::move(cohorts)) {}
  /// Judges one window: what to report now, in rank order.
  std::vector<StragglerReport> judge(const std::vector<RankStepTimes>& ranks);

 private:
  StragglerRules rules_;
  std::vector<int> cohorts_;
  struct RankState {
    int slow_for = 0;  // consecutive slow windows
    StragglerCause cause = StragglerCause::kCompute;
    int cause_for = 0;  // consecutive slow windows with this leading cause
    std::optional<StragglerCause> named;  // the cause it was last reported with
  };
  std::vector<RankState> ranks_;
};

/// Steps in the next window: as many as fit into `seconds` at the slowest
/// rank's mean step time (outside plus wait) in `last`, at least 1 and at
/// most `max_steps`. The same on every rank, which holds the same figures.
std::int64_t next_window_steps(const StepTimesWindow& last, std::int64_t max_steps,
                               double seconds);

/// The report: "rank 1 (host h1) is a straggler: 46 ms per step outside
/// collectives against 6 ms for the others (data 0.1, compute 2.6, callbacks
/// and other 43 ms); the others wait 40 ms per step for it (last 20 steps)".
/// With a changed cause: "rank 1 (host h1) is still a straggler, now mostly
/// data: ...". `host` may be empty (then no host is named). With a
/// `cohort` ("stage 1 of 2"), the rank's place and its reference say so:
/// "rank 3 (host h1, stage 1 of 2) is a straggler: 46 ms per step outside
/// collectives against 6 ms for the other replicas of stage 1 of 2 ...".
std::string straggler_message(const StragglerReport& report, const std::string& host,
                              std::int64_t steps, const std::string& cohort = "");

}  // namespace tnt::train
