#include "train/observe/straggler.h"

#include <algorithm>
#include <array>
#include <cmath>

#include <fmt/format.h>

#include <tarantella/base/error.h>

namespace tnt::train {
namespace {

double median(std::vector<double> v) {
  const std::size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid), v.end());
  const double upper = v[mid];
  if (v.size() % 2 == 1) return upper;
  return (*std::max_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid)) + upper) / 2;
}

// The ranks `r` is compared with: the others of its cohort.
std::vector<std::size_t> others_of(std::size_t r, std::size_t count,
                                   const std::vector<int>& cohorts) {
  std::vector<std::size_t> others;
  for (std::size_t o = 0; o < count; ++o) {
    if (o != r && (cohorts.empty() || cohorts[o] == cohorts[r])) others.push_back(o);
  }
  return others;
}

// The median over the ranks `others` of one figure.
template <typename Figure>
double others_median(const std::vector<RankStepTimes>& ranks,
                     const std::vector<std::size_t>& others, Figure figure) {
  std::vector<double> values;
  for (std::size_t o : others) values.push_back(figure(ranks[o]));
  return median(std::move(values));
}

// Of data, compute and other, the part by which rank `r` exceeds the
// others' median most (ties: the earlier one).
StragglerCause leading_cause(const std::vector<RankStepTimes>& ranks, std::size_t r,
                             const std::vector<std::size_t>& others) {
  const RankStepTimes& mine = ranks[r];
  const std::array<double, 3> excess = {
      mine.data_ms - others_median(ranks, others, [](const RankStepTimes& t) { return t.data_ms; }),
      mine.compute_ms -
          others_median(ranks, others, [](const RankStepTimes& t) { return t.compute_ms; }),
      mine.other_ms -
          others_median(ranks, others, [](const RankStepTimes& t) { return t.other_ms; })};
  const auto lead = std::max_element(excess.begin(), excess.end()) - excess.begin();
  return static_cast<StragglerCause>(lead);
}

// "85 ms", "0.42 ms": whole milliseconds where that says enough.
std::string ms(double value) {
  return value >= 10.0 ? fmt::format("{:.0f} ms", value) : fmt::format("{:.2g} ms", value);
}

// A part of the breakdown, without the unit: "43", "2.6", "0.1".
std::string part(double value) {
  return value >= 10.0 ? fmt::format("{:.0f}", value) : fmt::format("{:.1f}", value);
}

}  // namespace

const char* cause_name(StragglerCause cause) {
  switch (cause) {
    case StragglerCause::kData:
      return "data";
    case StragglerCause::kCompute:
      return "compute";
    case StragglerCause::kOther:
      return "callbacks and other";
  }
  return "?";
}

std::vector<Straggler> find_stragglers(const std::vector<RankStepTimes>& ranks,
                                       const StragglerRules& rules,
                                       const std::vector<int>& cohorts) {
  TNT_CHECK(cohorts.empty() || cohorts.size() == ranks.size(), "find_stragglers: ",
            cohorts.size(), " cohorts given for ", ranks.size(), " ranks: give one per rank");
  std::vector<Straggler> found;
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    const std::vector<std::size_t> others = others_of(r, ranks.size(), cohorts);
    if (others.empty()) continue;  // alone in its cohort: no reference
    const double reference =
        others_median(ranks, others, [](const RankStepTimes& t) { return t.outside_ms(); });
    const double mine = ranks[r].outside_ms();
    if (!(reference > 0.0)) continue;
    if (mine <= reference * (1.0 + rules.margin()) || mine - reference < rules.min_gap_ms()) {
      continue;
    }
    double others_wait = 0.0;
    for (std::size_t o : others) others_wait += ranks[o].wait_ms;
    found.push_back({static_cast<int>(r), ranks[r], reference,
                     others_wait / static_cast<double>(others.size()),
                     leading_cause(ranks, r, others)});
  }
  return found;
}

std::vector<StragglerReport> StragglerTracker::judge(const std::vector<RankStepTimes>& ranks) {
  ranks_.resize(ranks.size());
  const std::vector<Straggler> found = find_stragglers(ranks, rules_, cohorts_);
  std::vector<int> slow_now(ranks.size(), 0);
  for (const Straggler& s : found) {
    RankState& st = ranks_[static_cast<std::size_t>(s.rank)];
    slow_now[static_cast<std::size_t>(s.rank)] = 1;
    st.cause_for = st.slow_for > 0 && st.cause == s.cause ? st.cause_for + 1 : 1;
    st.cause = s.cause;
    ++st.slow_for;
  }
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    if (!slow_now[r]) ranks_[r].slow_for = ranks_[r].cause_for = 0;
  }
  std::vector<StragglerReport> reports;
  bool newly_named = false;
  for (const Straggler& s : found) {
    const RankState& st = ranks_[static_cast<std::size_t>(s.rank)];
    if (st.slow_for < rules_.windows()) continue;
    if (!st.named) {
      reports.push_back({s, false});
      newly_named = true;
    } else if (*st.named != s.cause && st.cause_for >= rules_.windows()) {
      reports.push_back({s, true});
    }
  }
  // Another rank became a straggler: a named rank that is not slow now
  // counts as new when it is slow again.
  if (newly_named) {
    for (std::size_t r = 0; r < ranks.size(); ++r) {
      if (!slow_now[r]) ranks_[r].named.reset();
    }
  }
  for (const StragglerReport& report : reports) {
    ranks_[static_cast<std::size_t>(report.straggler.rank)].named = report.straggler.cause;
  }
  return reports;
}

std::int64_t next_window_steps(const StepTimesWindow& last, std::int64_t max_steps,
                               double seconds) {
  double slowest_ms = 0.0;
  for (const RankStepTimes& t : last.ranks) {
    slowest_ms = std::max(slowest_ms, t.outside_ms() + t.wait_ms);
  }
  if (!(slowest_ms > 0.0)) return max_steps;
  const double fit = std::floor(seconds * 1000.0 / slowest_ms);
  if (fit >= static_cast<double>(max_steps)) return max_steps;
  return std::max<std::int64_t>(1, static_cast<std::int64_t>(fit));
}

std::string straggler_message(const StragglerReport& report, const std::string& host,
                              std::int64_t steps, const std::string& cohort) {
  const Straggler& s = report.straggler;
  std::string place = host.empty() ? "" : "host " + host;
  if (!cohort.empty()) place += (place.empty() ? "" : ", ") + cohort;
  const std::string who =
      fmt::format("rank {}{}", s.rank, place.empty() ? "" : fmt::format(" ({})", place));
  const std::string others =
      cohort.empty() ? std::string("the others") : "the other replicas of " + cohort;
  const std::string verdict =
      report.cause_changed ? fmt::format("is still a straggler, now mostly {}", cause_name(s.cause))
                           : std::string("is a straggler");
  return fmt::format(
      "{} {}: {} per step outside collectives against {} for {} (data {}, compute {}, "
      "callbacks and other {} ms); the others wait {} per step for it (last {} steps)",
      who, verdict, ms(s.times.outside_ms()), ms(s.others_outside_ms), others,
      part(s.times.data_ms), part(s.times.compute_ms), part(s.times.other_ms),
      ms(s.others_wait_ms), steps);
}

}  // namespace tnt::train
