#include "train/observe/straggler_monitor.h"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <utility>

#include <torch/torch.h>

#include <tarantella/base/error.h>
#include <tarantella/base/logging.h>

#include "train/observe/timeline.h"

namespace tnt::train {
namespace {

// Host names travel as fixed rows (one allgather); Linux's are at most 64.
constexpr std::int64_t kHostBytes = 256;
// Values per rank in the window's allgather: data, compute, other, wait.
constexpr std::int64_t kFigures = 4;

double mean_ms(StragglerMonitor::Clock::duration total, std::int64_t steps) {
  return std::chrono::duration<double, std::milli>(total).count() / static_cast<double>(steps);
}

}  // namespace

StragglerMonitor::StragglerMonitor(comm::ProcessGroup group, std::int64_t max_window,
                                   Timeline* timeline, StragglerRules rules,
                                   StragglerCohorts cohorts)
    : group_(std::move(group)),
      max_window_(max_window),
      timeline_(timeline),
      rules_(rules),
      cohorts_(std::move(cohorts)),
      tracker_(rules, cohorts_.of_rank) {
  TNT_CHECK(max_window_ > 0, "straggler window of ", max_window_,
            " steps: use a positive number of steps, or 0 to switch the report off");
  TNT_CHECK(cohorts_.of_rank.empty() ||
                static_cast<int>(cohorts_.of_rank.size()) == group_.size(),
            "straggler cohorts: ", cohorts_.of_rank.size(), " given for a ", group_.describe(),
            ": give one per rank");
}

void StragglerMonitor::start(Clock::time_point at) { last_ = at; }

std::optional<StepTimesWindow> StragglerMonitor::record(const StepSample& step) {
  const auto entered = Clock::now();
  if (last_) {
    // The cycle since the previous step's end, less what is measured apart.
    const Clock::duration rest = step.end - *last_ - step.data - step.compute - step.wait;
    other_ += std::max(rest, Clock::duration::zero());
  }
  data_ += step.data;
  compute_ += step.compute;
  wait_ += step.wait;
  last_ = step.end;
  ++steps_;
  if (++in_window_ < window_steps_) return std::nullopt;
  const StepTimesWindow w = gather();
  window_steps_ = next_window_steps(w, max_window_, rules_.window_seconds());
  std::optional<StepTimesWindow> out;
  if (warmed_up_) {
    const std::vector<StragglerReport> reports = tracker_.judge(w.ranks);
    if (!reports.empty()) report(w, reports);
    if (timeline_) {
      const RankStepTimes& mine = w.ranks[static_cast<std::size_t>(group_.rank())];
      timeline_->counter("step times (ms)", Clock::now(),
                         {{"data", mine.data_ms},
                          {"compute", mine.compute_ms},
                          {"other", mine.other_ms},
                          {"wait", mine.wait_ms}});
    }
    out = w;
  }
  warmed_up_ = true;
  // The monitor's own collectives are nobody's "other" time.
  *last_ += Clock::now() - entered;
  return out;
}

StepTimesWindow StragglerMonitor::gather() {
  const torch::Tensor mine =
      torch::tensor({mean_ms(data_, in_window_), mean_ms(compute_, in_window_),
                     mean_ms(other_, in_window_), mean_ms(wait_, in_window_)},
                    torch::kFloat64);
  const torch::Tensor all = group_.allgather(mine).contiguous();
  const double* v = all.data_ptr<double>();
  StepTimesWindow w;
  w.step = steps_;
  w.steps = in_window_;
  for (int r = 0; r < group_.size(); ++r) {
    const double* row = v + kFigures * r;
    w.ranks.push_back({row[0], row[1], row[2], row[3]});
  }
  data_ = compute_ = other_ = wait_ = Clock::duration::zero();
  in_window_ = 0;
  return w;
}

// Every rank comes here for the same windows (the same figures, the same
// detector), so the host names' allgather matches on every rank.
void StragglerMonitor::report(const StepTimesWindow& w,
                              const std::vector<StragglerReport>& reports) {
  const std::vector<std::string>& names = hosts();
  if (!group_.is_master()) return;
  for (const StragglerReport& r : reports) {
    const auto rank = static_cast<std::size_t>(r.straggler.rank);
    std::string cohort;
    if (!cohorts_.of_rank.empty()) {
      const auto c = static_cast<std::size_t>(cohorts_.of_rank[rank]);
      if (c < cohorts_.names.size()) cohort = cohorts_.names[c];
    }
    const std::string message = straggler_message(r, names[rank], w.steps, cohort);
    log::warning(message);
    if (timeline_) timeline_->instant(Timeline::kCompute, message, Clock::now());
  }
}

const std::vector<std::string>& StragglerMonitor::hosts() {
  if (!hosts_.empty()) return hosts_;
  std::array<char, kHostBytes> name{};
  if (::gethostname(name.data(), name.size() - 1) != 0) name[0] = '\0';
  const torch::Tensor mine = torch::from_blob(name.data(), {kHostBytes}, torch::kUInt8).clone();
  const torch::Tensor all = group_.allgather(mine).contiguous();
  const char* bytes = reinterpret_cast<const char*>(all.data_ptr<std::uint8_t>());
  for (int r = 0; r < group_.size(); ++r) {
    const char* row = bytes + r * kHostBytes;
    hosts_.emplace_back(row, strnlen(row, static_cast<std::size_t>(kHostBytes)));
  }
  return hosts_;
}

}  // namespace tnt::train
