#include "train/straggler_monitor.h"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <utility>

#include <torch/torch.h>

#include <tarantella/base/error.h>
#include <tarantella/base/logging.h>

#include "train/timeline.h"

namespace tnt::train {
namespace {

// Host names travel as fixed rows (one allgather); Linux's are at most 64.
constexpr std::int64_t kHostBytes = 256;

double mean_ms(StragglerMonitor::Clock::duration total, std::int64_t steps) {
  return std::chrono::duration<double, std::milli>(total).count() / static_cast<double>(steps);
}

}  // namespace

StragglerMonitor::StragglerMonitor(comm::ProcessGroup group, std::int64_t window,
                                   Timeline* timeline, StragglerRules rules)
    : group_(std::move(group)), window_(window), timeline_(timeline), tracker_(rules) {
  TNT_CHECK(window_ > 0, "straggler window of ", window_,
            " steps: use a positive number of steps, or 0 to switch the report off");
}

std::optional<StepTimesWindow> StragglerMonitor::record(Clock::duration compute,
                                                        Clock::duration wait) {
  compute_ += compute;
  wait_ += wait;
  if (++steps_ % window_ != 0) return std::nullopt;
  StepTimesWindow w = gather();
  compute_ = wait_ = Clock::duration::zero();
  const std::vector<Straggler> stragglers = tracker_.judge(w.ranks);
  if (!stragglers.empty()) report(w, stragglers);
  if (timeline_) {
    const RankStepTimes& mine = w.ranks[static_cast<std::size_t>(group_.rank())];
    timeline_->counter("step times (ms)", Clock::now(),
                       {{"compute", mine.compute_ms}, {"wait", mine.wait_ms}});
  }
  return w;
}

StepTimesWindow StragglerMonitor::gather() const {
  const torch::Tensor mine =
      torch::tensor({mean_ms(compute_, window_), mean_ms(wait_, window_)}, torch::kFloat64);
  const torch::Tensor all = group_.allgather(mine).contiguous();
  const double* v = all.data_ptr<double>();
  StepTimesWindow w;
  w.step = steps_;
  w.steps = window_;
  for (int r = 0; r < group_.size(); ++r) w.ranks.push_back({v[2 * r], v[2 * r + 1]});
  return w;
}

// Every rank comes here for the same windows (the same figures, the same
// detector), so the host names' allgather matches on every rank.
void StragglerMonitor::report(const StepTimesWindow& w, const std::vector<Straggler>& stragglers) {
  const std::vector<std::string>& names = hosts();
  if (!group_.is_master()) return;
  for (const Straggler& s : stragglers) {
    const std::string message =
        straggler_message(s, names[static_cast<std::size_t>(s.rank)], w.steps);
    log::info(message);
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
