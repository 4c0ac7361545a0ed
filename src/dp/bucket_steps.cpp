// Stepping an optimizer on some of its parameters only, and BucketSteps
// (see bucket_steps.h).
#include "dp/bucket_steps.h"

#include <map>
#include <utility>

#include <torch/torch.h>

#include <tarantella/base/error.h>
#include <tarantella/base/torch_compat.h>

#include "dp/optimizer_state.h"

namespace tnt::dp {

void step_subset(torch::optim::Optimizer& optimizer,
                 const std::vector<std::vector<torch::Tensor>>& per_group) {
  auto& groups = optimizer.param_groups();
  TNT_CHECK(per_group.size() == groups.size(), "step_subset: ", per_group.size(),
            " parameter lists for ", groups.size(), " optimizer groups");
  std::vector<std::vector<torch::Tensor>> all(groups.size());
  for (std::size_t g = 0; g < groups.size(); ++g) {
    all[g] = std::exchange(groups[g].params(), per_group[g]);
  }
  auto restore = [&] {
    for (std::size_t g = 0; g < groups.size(); ++g) groups[g].params() = std::move(all[g]);
  };
  try {
    optimizer.step();
  } catch (...) {
    restore();
    throw;
  }
  restore();
}

std::vector<int> groups_of(const std::vector<torch::Tensor>& params,
                           const torch::optim::Optimizer& optimizer, const char* caller) {
  std::map<compat::OptimizerStateKey, std::size_t> index;
  for (std::size_t p = 0; p < params.size(); ++p) index[compat::optimizer_state_key(params[p])] = p;
  std::vector<int> group_of(params.size(), -1);
  const auto& groups = optimizer.param_groups();
  for (std::size_t g = 0; g < groups.size(); ++g) {
    for (const auto& t : groups[g].params()) {
      const auto it = index.find(compat::optimizer_state_key(t));
      TNT_CHECK(it != index.end(), caller, ": the optimizer's parameter group ", g,
                " holds a tensor that is not one of the model's trainable parameters: build the "
                "optimizer on the model's parameters only");
      group_of[it->second] = static_cast<int>(g);
    }
  }
  return group_of;
}

BucketSteps::BucketSteps(const std::vector<torch::Tensor>& params,
                         const std::vector<Bucket>& buckets, torch::optim::Optimizer& optimizer)
    : optimizer_(&optimizer) {
  TNT_CHECK(updates_element_wise(optimizer),
            "BucketSteps: the optimizer does not update element-wise");
  const std::vector<int> group_of = groups_of(params, optimizer, "BucketSteps");
  for (const Bucket& bucket : buckets) {
    std::vector<std::vector<torch::Tensor>> per_group(optimizer.param_groups().size());
    for (std::size_t p : bucket.params) {
      if (group_of[p] >= 0) per_group[group_of[p]].push_back(params[p]);
    }
    per_bucket_.push_back(std::move(per_group));
  }
}

void BucketSteps::step(std::size_t b) { step_subset(*optimizer_, per_bucket_.at(b)); }

}  // namespace tnt::dp
