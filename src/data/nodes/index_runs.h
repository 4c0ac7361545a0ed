// Requests to a node that combines several views (repeat's passes,
// concatenate's inputs) are split into runs of consecutive indices that go to
// the same view, so each view still gets one request per run.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "data/pipeline/element_ops.h"
#include "data/pipeline/node.h"

namespace tnt::data::detail {

/// Where an outer index lives: {which view, index inside it}.
using Location = std::pair<std::int64_t, std::int64_t>;

/// Calls fn(view, local_indices) for each run of indices whose `locate`
/// gives the same view, in order.
template <typename Locate, typename Fn>
void for_each_run(const std::vector<std::int64_t>& indices, Locate&& locate, Fn&& fn) {
  std::vector<std::int64_t> run;
  std::int64_t current = -1;
  for (std::int64_t i : indices) {
    const Location at = locate(i);
    if (at.first != current && !run.empty()) {
      fn(current, run);
      run.clear();
    }
    current = at.first;
    run.push_back(at.second);
  }
  if (!run.empty()) fn(current, run);
}

/// get_many over runs; `view_of(v)` is the Indexed for view v.
template <typename Locate, typename ViewOf>
std::vector<Element> get_many_in_runs(const std::vector<std::int64_t>& indices, Locate&& locate,
                                      ViewOf&& view_of) {
  std::vector<Element> out;
  out.reserve(indices.size());
  for_each_run(indices, locate, [&](std::int64_t v, const std::vector<std::int64_t>& run) {
    for (auto& e : view_of(v).get_many(run)) out.push_back(std::move(e));
  });
  return out;
}

/// gather over runs: one gather per run, concatenated.
template <typename Locate, typename ViewOf>
Element gather_in_runs(const std::vector<std::int64_t>& indices, Locate&& locate,
                       ViewOf&& view_of) {
  std::vector<Element> parts;
  for_each_run(indices, locate, [&](std::int64_t v, const std::vector<std::int64_t>& run) {
    parts.push_back(view_of(v).gather(run));
  });
  return concat_elements(parts);
}

}  // namespace tnt::data::detail
