// Bad samples skipped by the input pipeline (an image source with
// OnBadSample::skip): each rank drops the bad samples it reads, so a global
// batch holds fewer samples than its nominal size, and the skipped count is
// spread over the ranks. The loops use this to weight each step by the
// samples that remain (one allreduce of the local counts) and to report,
// once per epoch or evaluation, how many were skipped in all.
//
// Whether a dataset may drop samples is a static property of its pipeline,
// the same on every rank, so every rank takes the same collective path.
#pragma once

#include <cstdint>
#include <string>

#include <tarantella/comm/process_group.h>
#include <tarantella/data/dataset.h>

namespace tnt::train {

/// The sum of `local` over the ranks of `group`. Collective.
std::int64_t global_sample_count(const comm::ProcessGroup& group, std::int64_t local);

/// Counts the samples a dataset skips between start() and report().
class SkippedSamples {
 public:
  explicit SkippedSamples(const data::Dataset& dataset);
  bool may_skip() const { return may_skip_; }
  /// Starts counting from now.
  void start();
  /// The samples skipped on all ranks since start(): logged once by the
  /// master when any were, as "`what`: skipped N bad samples ...".
  /// Collective when the dataset may skip samples; 0 without a collective
  /// otherwise.
  std::int64_t report(const comm::ProcessGroup& group, const std::string& what);

 private:
  const data::Dataset& dataset_;
  bool may_skip_;
  std::int64_t start_ = 0;
};

}  // namespace tnt::train
