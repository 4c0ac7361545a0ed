// Private: the training timeline (TNT_TIMELINE / the launcher's --timeline).
//
// Every rank records its steps as Chrome-trace events — forward, backward,
// waiting for gradients, the optimizer step, waiting for data, and each
// bucket's allreduce (an instant when enqueued, a slice from started to
// finished) — on two tracks per rank ("compute", "allreduce"; the process is
// "rank R"), plus counters: the straggler report's breakdown per step of
// each window, "step times (ms)" with the series data, compute, other and
// wait (train/observe/straggler_monitor.h). With pipeline stages, a step's
// one forward and one backward slice become a slice per micro-batch
// ("forward 3", "backward 3"), with the waits for a neighbour between them
// ("receive activations 3 (from stage 0)", "receive gradients 3 (from
// stage 1)", "wait for sends"), and each send from posted to taken on a
// third track, "stage link" (train/step/train_step.cpp, record_step). The
// trace covers the model's whole group (every stage of every pipeline).
// Events are handed to a writer thread that formats them, so recording
// costs the training loop a queue push and never blocks communication. At
// the end of fit() (a collective) the ranks' events are gathered on the
// master, which writes one trace file (temporary name, then
// rename) that chrome://tracing and ui.perfetto.dev load.
//
// Time stamps are microseconds of the steady clock minus an origin agreed
// at start (the smallest over ranks): exact on one host; on several hosts
// the tracks are offset by the hosts' clock difference.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <tarantella/comm/process_group.h>

namespace tnt {

class Timeline {
 public:
  using Clock = std::chrono::steady_clock;
  /// kStageLink: a pipeline stage's sends, which run beside its compute
  /// (named on a rank's first event there).
  enum Track { kCompute = 0, kAllreduce = 1, kStageLink = 2 };

  /// Collective over `group` (agrees on the time origin). `path` is where
  /// the group's master writes the trace; tracks are named by world rank.
  Timeline(comm::ProcessGroup group, std::string path);
  ~Timeline();
  Timeline(const Timeline&) = delete;
  Timeline& operator=(const Timeline&) = delete;

  /// A slice [begin, end] on `track`.
  void slice(Track track, std::string name, Clock::time_point begin, Clock::time_point end);
  /// An instant on `track`.
  void instant(Track track, std::string name, Clock::time_point at);
  /// A counter sample: the named `values` of counter `name` from `at` on
  /// (one graph per counter in the rank's process).
  void counter(std::string name, Clock::time_point at,
               const std::vector<std::pair<std::string, double>>& values);
  /// Gathers every rank's events on the master and (re)writes the file with
  /// everything recorded so far. Collective.
  void write();


 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// The share of communication time that was hidden behind computation in
/// one step: the part of each allreduce slice [started, finished] that lies
/// inside [compute_begin, compute_end], summed, over the total allreduce
/// time. Accumulate over an epoch with add(); fraction() is 1 when nothing
/// was communicated.
struct OverlapMeter {
  double hidden_s = 0.0;
  double total_s = 0.0;
  void add(Timeline::Clock::time_point compute_begin, Timeline::Clock::time_point compute_end,
           Timeline::Clock::time_point started, Timeline::Clock::time_point finished);
  double fraction() const { return total_s > 0 ? hidden_s / total_s : 1.0; }
};

}  // namespace tnt
