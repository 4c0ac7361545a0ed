#include "train/step/autotune.h"

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
  if (bytes % 1024 == 0) return fmt::format("{} KiB", bytes / 1024);
  return fmt::format("{} bytes", bytes);
}

std::string describe(const EngineSetting& s) {
  return fmt::format("fusion threshold {}, overlap {}", human(s.threshold_bytes),
                     s.overlap ? "on" : "off");
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// The plan as numbers, for the check that every rank has the same one.
std::vector<double> fingerprint(const AutoTuneOptions& o) {
  double thresholds = 0;
  for (std::size_t i = 0; i < o.thresholds().size(); ++i) {
    thresholds += static_cast<double>(i + 1) * static_cast<double>(o.thresholds()[i]);
  }
  return {static_cast<double>(o.thresholds().size()), thresholds,
          static_cast<double>(o.start().threshold_bytes), o.start().overlap ? 1.0 : 0.0,
          o.tune_overlap() ? 1.0 : 0.0, static_cast<double>(o.warmup_steps()),
          static_cast<double>(o.measured_steps())};
}

}  // namespace

std::vector<std::size_t> default_autotune_thresholds() {
  return {0, 16 << 10, 64 << 10, 256 << 10, 1 << 20, 4 << 20, 16 << 20};
}

AutoTuneOptions AutoTuneOptions::from_engine(const train::EngineOptions& options,
                                             std::size_t configured_threshold) {
  return AutoTuneOptions()
      .start({configured_threshold, options.overlap()})
      .tune_overlap(!options.overlap_set())
      .log_path(options.autotune_log_path());
}

AutoTuner::AutoTuner(comm::ProcessGroup group, AutoTuneOptions options)
    : group_(std::move(group)), options_(std::move(options)) {
  TNT_CHECK(!options_.thresholds().empty(), "auto-tuning needs at least one candidate threshold");
  TNT_CHECK(options_.warmup_steps() >= 0 && options_.measured_steps() >= 1,
            "auto-tuning needs warmup >= 0 and measured >= 1 steps, got ", options_.warmup_steps(),
            " and ", options_.measured_steps());
  // One allreduce(max) of (plan, -plan): equal maxima and minima on every rank.
  const std::vector<double> mine = fingerprint(options_);
  std::vector<double> both = mine;
  for (double v : mine) both.push_back(-v);
  torch::Tensor t = torch::tensor(both, torch::kFloat64);
  group_.allreduce(t, comm::ReduceOp::Max);
  const auto n = static_cast<std::int64_t>(mine.size());
  TNT_CHECK(torch::equal(t.narrow(0, 0, n), -t.narrow(0, n, n)), "auto-tuning: rank ",
            group_.rank(), " of the ", group_.describe(), " has a different plan than another "
            "rank (TNT_OVERLAP, TNT_FUSION_THRESHOLD or the model's fusion threshold differ "
            "between ranks): set them alike on every rank");
  overlap_phase_ = options_.tune_overlap();
  if (overlap_phase_) {
    plan_ = {{options_.start().threshold_bytes, true}, {options_.start().threshold_bytes, false}};
  } else {
    plan_thresholds(options_.start().overlap);
  }
  log::info(fmt::format("autotune: trying {}{} fusion thresholds, {} + {} steps each",
                        overlap_phase_ ? "overlap on/off, then " : "",
                        options_.thresholds().size(), options_.warmup_steps(),
                        options_.measured_steps()));
}

EngineSetting AutoTuner::setting() const { return done_ ? chosen_ : plan_.front(); }

bool AutoTuner::record(double seconds) {
  if (done_) return false;
  ++steps_;
  if (step_in_trial_++ >= options_.warmup_steps()) measured_s_.push_back(seconds);
  if (step_in_trial_ < options_.warmup_steps() + options_.measured_steps()) return false;
  const EngineSetting previous = plan_.front();
  finish_trial();
  return setting() != previous;
}

void AutoTuner::finish_trial() {
  // The slowest rank's time of each step decides, on every rank alike.
  torch::Tensor t = torch::tensor(measured_s_, torch::kFloat64);
  group_.allreduce(t, comm::ReduceOp::Max);
  const std::vector<double> slowest(t.data_ptr<double>(), t.data_ptr<double>() + t.numel());
  trials_.push_back({plan_.front(), median(slowest)});
  log::info(fmt::format("autotune: trial {}: {}: {:.2f} ms/step", trials_.size(),
                        describe(trials_.back().setting), trials_.back().step_s * 1e3));
  plan_.erase(plan_.begin());
  measured_s_.clear();
  step_in_trial_ = 0;
  if (!plan_.empty()) return;
  if (overlap_phase_) {
    overlap_phase_ = false;
    const bool on_faster = trials_[0].step_s <= trials_[1].step_s;
    plan_thresholds(on_faster);
    if (!plan_.empty()) return;
  }
  choose();
}

void AutoTuner::plan_thresholds(bool overlap) {
  for (std::size_t threshold : options_.thresholds()) {
    const EngineSetting s{threshold, overlap};
    const bool tried = std::any_of(trials_.begin(), trials_.end(),
                                   [&](const Trial& t) { return t.setting == s; });
    if (!tried) plan_.push_back(s);
  }
}

void AutoTuner::choose() {
  // The fastest trial of the overlap that phase 1 chose (or the user set):
  // the last trial ran with it.
  const bool overlap = trials_.back().setting.overlap;
  const Trial* best = nullptr;
  for (const Trial& t : trials_) {
    if (t.setting.overlap == overlap && (best == nullptr || t.step_s < best->step_s)) best = &t;
  }
  chosen_ = best->setting;
  done_ = true;
  log::info(fmt::format("autotune: {} chosen ({:.2f} ms/step) after {} trials, {} steps",
                        describe(chosen_), best->step_s * 1e3, trials_.size(), steps_));
  write_log();
}

void AutoTuner::write_log() const {
  if (options_.log_path().empty() || !group_.is_master()) return;
  std::string csv = "threshold_bytes,overlap,step_ms,chosen\n";
  for (const Trial& t : trials_) {
    csv += fmt::format("{},{},{:.4f},{}\n", t.setting.threshold_bytes, t.setting.overlap ? 1 : 0,
                       t.step_s * 1e3, t.setting == chosen_ ? 1 : 0);
  }
  try {
    write_atomically(options_.log_path(), std::vector<char>(csv.begin(), csv.end()));
  } catch (const std::exception& e) {
    log::warning(fmt::format("autotune: cannot write the trial log '{}': {}", options_.log_path(),
                             e.what()));
  }
}

}  // namespace tnt
