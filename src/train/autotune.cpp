#include "train/autotune.h"

#include <algorithm>

#include <fmt/format.h>
#include <torch/torch.h>

#include <tarantella/base/error.h>
#include <tarantella/base/logging.h>

#include "io/atomic_file.h"

namespace tnt {
namespace {

std::string human(std::size_t bytes) {
  if (bytes == 0) return "0 (one allreduce per tensor)";
  if (bytes % (1024 * 1024) == 0) return fmt::format("{} MiB", bytes / (1024 * 1024));
  return fmt::format("{} KiB", bytes / 1024);
}

}  // namespace

AutoTuner::AutoTuner(comm::ProcessGroup group, std::vector<std::size_t> candidates,
                     int warmup_steps, int measured_steps, std::string log_path)
    : group_(std::move(group)),
      candidates_(std::move(candidates)),
      warmup_(warmup_steps),
      measured_(measured_steps),
      log_path_(std::move(log_path)) {
  TNT_CHECK(!candidates_.empty(), "auto-tuning needs at least one candidate threshold");
  TNT_CHECK(warmup_ >= 0 && measured_ >= 1, "auto-tuning needs warmup >= 0 and measured >= 1 steps");
  log::info(fmt::format("autotune: trying {} fusion thresholds, {} + {} steps each",
                        candidates_.size(), warmup_, measured_));
}

std::vector<std::size_t> AutoTuner::default_candidates() {
  return {0, 16 << 10, 64 << 10, 256 << 10, 1 << 20, 4 << 20, 16 << 20};
}

std::size_t AutoTuner::threshold() const {
  return done_ ? candidates_[chosen_] : candidates_[index_];
}

bool AutoTuner::record(double seconds) {
  if (done_) return false;
  if (step_in_trial_++ >= warmup_) elapsed_ += seconds;
  if (step_in_trial_ < warmup_ + measured_) return false;
  // The trial is over: the slowest rank's time decides, on every rank alike.
  torch::Tensor t = torch::tensor({elapsed_}, torch::kFloat64);
  group_.allreduce(t, comm::ReduceOp::Max);
  mean_step_s_.push_back(t.item<double>() / measured_);
  log::debug(fmt::format("autotune: threshold {}: {:.3f} ms/step", human(candidates_[index_]),
                         mean_step_s_.back() * 1e3));
  step_in_trial_ = 0;
  elapsed_ = 0.0;
  const std::size_t previous = candidates_[index_];
  if (++index_ < candidates_.size()) return candidates_[index_] != previous;

  done_ = true;
  chosen_ = static_cast<std::size_t>(
      std::min_element(mean_step_s_.begin(), mean_step_s_.end()) - mean_step_s_.begin());
  std::string trials;
  for (std::size_t i = 0; i < candidates_.size(); ++i) {
    trials += fmt::format("{}{}: {:.2f} ms", i ? ", " : "", human(candidates_[i]),
                          mean_step_s_[i] * 1e3);
  }
  log::info(fmt::format("autotune: fusion threshold {} chosen ({:.2f} ms/step; trials: {})",
                        human(candidates_[chosen_]), mean_step_s_[chosen_] * 1e3, trials));
  if (!log_path_.empty() && group_.is_master()) {
    std::string csv = "threshold_bytes,mean_step_ms,chosen\n";
    for (std::size_t i = 0; i < candidates_.size(); ++i) {
      csv += fmt::format("{},{:.4f},{}\n", candidates_[i], mean_step_s_[i] * 1e3,
                         i == chosen_ ? 1 : 0);
    }
    try {
      write_atomically(log_path_, std::vector<char>(csv.begin(), csv.end()));
    } catch (const std::exception& e) {
      log::warning(fmt::format("autotune: cannot write the trial log '{}': {}", log_path_,
                               e.what()));
    }
  }
  return candidates_[chosen_] != previous;
}

}  // namespace tnt
