#include "train/observe/skipped_samples.h"

#include <fmt/format.h>
#include <torch/torch.h>

#include <tarantella/base/logging.h>

namespace tnt::train {

std::int64_t global_sample_count(const comm::ProcessGroup& group, std::int64_t local) {
  torch::Tensor n = torch::tensor({local});
  group.allreduce(n);
  return n.item<std::int64_t>();
}

SkippedSamples::SkippedSamples(const data::Dataset& dataset)
    : dataset_(dataset), may_skip_(dataset.may_skip_samples()) {
  start();
}

void SkippedSamples::start() {
  if (may_skip_) start_ = dataset_.samples_skipped();
}

std::int64_t SkippedSamples::report(const comm::ProcessGroup& group, const std::string& what) {
  if (!may_skip_) return 0;
  const std::int64_t total = global_sample_count(group, dataset_.samples_skipped() - start_);
  if (total > 0 && group.is_master()) {
    // The group's master, which need not be the world's rank 0.
    log::write_on_every_rank(LogLevel::Warning,
                             fmt::format("{}: skipped {} bad sample{} (see the warnings above)",
                                         what, total, total == 1 ? "" : "s"));
  }
  start();
  return total;
}

}  // namespace tnt::train
