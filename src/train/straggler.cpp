#include "train/straggler.h"

#include <algorithm>

#include <fmt/format.h>

namespace tnt::train {
namespace {

double median(std::vector<double> v) {
  const std::size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid), v.end());
  const double upper = v[mid];
  if (v.size() % 2 == 1) return upper;
  return (*std::max_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid)) + upper) / 2;
}

// "85 ms", "0.42 ms": whole milliseconds where that says enough.
std::string ms(double value) {
  return value >= 10.0 ? fmt::format("{:.0f} ms", value) : fmt::format("{:.2g} ms", value);
}

}  // namespace

std::vector<Straggler> find_stragglers(const std::vector<RankStepTimes>& ranks,
                                       const StragglerRules& rules) {
  std::vector<Straggler> found;
  if (ranks.size() < 2) return found;
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    std::vector<double> others_compute;
    double others_wait = 0.0;
    for (std::size_t o = 0; o < ranks.size(); ++o) {
      if (o == r) continue;
      others_compute.push_back(ranks[o].compute_ms);
      others_wait += ranks[o].wait_ms;
    }
    const double reference = median(std::move(others_compute));
    const double mine = ranks[r].compute_ms;
    if (!(reference > 0.0)) continue;
    if (mine <= reference * (1.0 + rules.margin()) || mine - reference < rules.min_gap_ms()) {
      continue;
    }
    found.push_back({static_cast<int>(r), mine, reference,
                     others_wait / static_cast<double>(ranks.size() - 1)});
  }
  return found;
}

std::vector<Straggler> StragglerTracker::judge(const std::vector<RankStepTimes>& ranks) {
  slow_for_.resize(ranks.size(), 0);
  std::vector<int> slow_now(ranks.size(), 0);
  std::vector<Straggler> report;
  for (const Straggler& s : find_stragglers(ranks, rules_)) {
    slow_now[static_cast<std::size_t>(s.rank)] = 1;
    if (++slow_for_[static_cast<std::size_t>(s.rank)] == rules_.windows()) report.push_back(s);
  }
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    if (!slow_now[r]) slow_for_[r] = 0;
  }
  return report;
}

std::string straggler_message(const Straggler& s, const std::string& host, std::int64_t steps) {
  return fmt::format(
      "rank {}{} is a straggler: its compute is {:.1f}x the others' over the last {} steps ({} vs "
      "{}; they wait {} per step for it)",
      s.rank, host.empty() ? "" : fmt::format(" (host {})", host), s.ratio(), steps,
      ms(s.compute_ms), ms(s.others_compute_ms), ms(s.others_wait_ms));
}

}  // namespace tnt::train
