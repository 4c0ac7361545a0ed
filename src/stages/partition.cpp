// Cutting a Sequential into stages (partition.h). The balanced cut is the
// linear partition problem, solved exactly by dynamic programming over
// (layers, stages): O(P L^2) steps, nothing for a model's few hundred
// layers.
#include "stages/partition.h"

#include <algorithm>
#include <limits>

#include <fmt/format.h>

#include <tarantella/base/argument_error.h>

namespace tnt::stages {

std::vector<int> balanced_cuts(const std::vector<std::int64_t>& parameters, int stages) {
  const int layers = static_cast<int>(parameters.size());
  TNT_CHECK_ARG(stages >= 1, "pipeline_stages must be at least 1, got ", stages);
  TNT_CHECK_ARG(layers >= stages, "a Sequential of ", layers, " layers cannot be cut into ",
                stages, " pipeline stages: each stage needs at least one layer; use at most ",
                layers, " stages, or split the layers into smaller ones");
  std::vector<std::int64_t> prefix(static_cast<std::size_t>(layers) + 1, 0);
  for (int i = 0; i < layers; ++i) prefix[i + 1] = prefix[i] + parameters[i];
  const auto sum = [&](int from, int to) { return prefix[to] - prefix[from]; };
  // best[k][i]: over the first i layers in k stages, the smallest largest
  // stage, then the smallest sum of squared stage sizes (the most even of
  // the cuts with that largest stage); start[k][i]: where the last of
  // those k stages starts. Of equal cuts the latest start wins, so that a
  // layer without parameters (an activation) stays with the layer before it.
  using Cost = std::pair<std::int64_t, double>;
  const Cost none{std::numeric_limits<std::int64_t>::max(), 0.0};
  std::vector<std::vector<Cost>> best(stages + 1, std::vector<Cost>(layers + 1, none));
  std::vector<std::vector<int>> start(stages + 1, std::vector<int>(layers + 1, 0));
  best[0][0] = {0, 0.0};
  for (int k = 1; k <= stages; ++k) {
    for (int i = k; i <= layers; ++i) {
      for (int j = k - 1; j < i; ++j) {
        if (best[k - 1][j] == none) continue;
        const std::int64_t size = sum(j, i);
        const Cost cost{std::max(best[k - 1][j].first, size),
                        best[k - 1][j].second + static_cast<double>(size) * static_cast<double>(size)};
        if (cost <= best[k][i]) {
          best[k][i] = cost;
          start[k][i] = j;
        }
      }
    }
  }
  std::vector<int> cuts(static_cast<std::size_t>(stages));
  for (int k = stages, i = layers; k >= 1; --k) {
    cuts[k - 1] = start[k][i];
    i = start[k][i];
  }
  return cuts;
}

std::vector<int> cuts_at_split_points(const std::vector<int>& split_points, int layers,
                                      int stages) {
  const int count = static_cast<int>(split_points.size());
  TNT_CHECK_ARG(count == stages - 1, "the Sequential has ", count, " SplitPoint",
                count == 1 ? "" : "s", ", which make ", count + 1, " stage",
                count == 0 ? "" : "s", ", but pipeline_stages=", stages, ": a model cut into ",
                stages, " stages needs ", stages - 1, " SplitPoints (or none, to be cut ",
                "automatically)");
  std::vector<int> cuts{0};
  int previous = -1;
  for (int i = 0; i < count; ++i) {
    const int at = split_points[i];
    TNT_CHECK_ARG(at > previous + 1, "stage ", i, " of the Sequential would have no layer ",
                  "(the SplitPoint at index ", at, "): put at least one layer between two ",
                  "SplitPoints and none at either end");
    TNT_CHECK_ARG(at < layers - 1, "stage ", i + 1, " of the Sequential would have no layer ",
                  "(the SplitPoint at index ", at, " ends it): put at least one layer between ",
                  "two SplitPoints and none at either end");
    cuts.push_back(at + 1);
    previous = at;
  }
  return cuts;
}

std::vector<std::pair<int, int>> stage_ranges(const std::vector<bool>& split_point,
                                              const std::vector<std::int64_t>& parameters,
                                              int stages, std::vector<std::int64_t>* per_stage) {
  const int layers = static_cast<int>(parameters.size());
  std::vector<int> splits;
  for (int i = 0; i < layers; ++i) {
    if (split_point[static_cast<std::size_t>(i)]) splits.push_back(i);
  }
  const std::vector<int> cuts = splits.empty() ? balanced_cuts(parameters, stages)
                                               : cuts_at_split_points(splits, layers, stages);
  std::vector<std::pair<int, int>> ranges;
  for (int s = 0; s < stages; ++s) {
    const int next = s + 1 < stages ? cuts[s + 1] : layers;
    // With SplitPoints, a stage ends at its SplitPoint.
    ranges.emplace_back(cuts[s], splits.empty() || s + 1 == stages ? next : splits[s]);
  }
  if (per_stage != nullptr) {
    per_stage->clear();
    for (const auto& [begin, end] : ranges) {
      std::int64_t n = 0;
      for (int i = begin; i < end; ++i) n += parameters[static_cast<std::size_t>(i)];
      per_stage->push_back(n);
    }
  }
  return ranges;
}

std::string describe_cut(const std::vector<std::pair<int, int>>& ranges,
                         const std::vector<std::int64_t>& per_stage,
                         const std::vector<bool>& split_point) {
  const bool at_split_points =
      std::find(split_point.begin(), split_point.end(), true) != split_point.end();
  std::string out = fmt::format("pipeline: {} stages, cut {}:", ranges.size(),
                                at_split_points ? "at the SplitPoints"
                                                : "by parameter count (the Sequential has no "
                                                  "SplitPoint)");
  for (std::size_t s = 0; s < ranges.size(); ++s) {
    out += fmt::format("{} layers {}-{} ({} parameters)", s == 0 ? "" : ",", ranges[s].first,
                       ranges[s].second - 1, per_stage[s]);
  }
  return out;
}

}  // namespace tnt::stages
