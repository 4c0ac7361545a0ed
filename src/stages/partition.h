// Private: where a Sequential is cut into pipeline stages: at the user's
// SplitPoints, or, without any, into stages of about equal parameter
// count.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace tnt::stages {

/// The first layer of each of `stages` stages over layers with
/// `parameters[i]` parameters each, contiguous and non-empty, so that the
/// largest stage's parameter count is as small as it can be (ties: the
/// earliest cut). The result starts with 0. Throws tnt::ArgumentError when
/// there are fewer layers than stages.
std::vector<int> balanced_cuts(const std::vector<std::int64_t>& parameters, int stages);

/// The stages that SplitPoints at layer indices `split_points` (each the
/// index of a SplitPoint among `layers` layers, SplitPoints included) make:
/// the first layer of each stage, SplitPoints left out. Throws
/// tnt::ArgumentError when their count is not stages - 1 or a stage would
/// be empty.
std::vector<int> cuts_at_split_points(const std::vector<int>& split_points, int layers,
                                      int stages);

/// The layers of each stage of a Sequential whose layers are described by
/// `split_point` (whether layer i is a SplitPoint) and `parameters`
/// (layer i's parameter count): [begin, end) per stage, SplitPoints left
/// out of every range. Cut at the SplitPoints if there are any, else
/// balanced. `per_stage`, if given, receives each stage's parameter count.
std::vector<std::pair<int, int>> stage_ranges(const std::vector<bool>& split_point,
                                              const std::vector<std::int64_t>& parameters,
                                              int stages,
                                              std::vector<std::int64_t>* per_stage = nullptr);

/// "pipeline: 2 stages, cut at the SplitPoints: layers 0-2 (600
/// parameters), 4-6 (68 parameters)": logged once by the master.
std::string describe_cut(const std::vector<std::pair<int, int>>& ranges,
                         const std::vector<std::int64_t>& per_stage,
                         const std::vector<bool>& split_point);

}  // namespace tnt::stages
