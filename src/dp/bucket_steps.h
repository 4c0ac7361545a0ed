// Private: the optimizer step of some parameters only, and BucketSteps,
// which uses it to step an element-wise optimizer bucket by bucket.
//
// torch::optim steps every parameter of its groups at once. To overlap the
// update with the gradient exchange, a bucket's parameters are stepped as
// soon as its allreduce is done: their groups are narrowed to them for the
// step. For the element-wise optimizers (updates_element_wise) that is the
// same arithmetic as one whole step. The sharded optimizer (OptimizerShards)
// steps its pieces the same way.
#pragma once

#include <cstddef>
#include <vector>

#include <torch/types.h>

#include <tarantella/dp/bucket_plan.h>

namespace torch::optim {
class Optimizer;
}

namespace tnt::dp {

/// The optimizer step of some parameters only: `per_group[g]` replaces group
/// g's parameters during the step. The state of the others is untouched.
void step_subset(torch::optim::Optimizer& optimizer,
                 const std::vector<std::vector<torch::Tensor>>& per_group);

/// Which optimizer group holds each of `params` (-1: none). A group holding
/// a tensor not in `params` is an error, named for `caller`.
std::vector<int> groups_of(const std::vector<torch::Tensor>& params,
                           const torch::optim::Optimizer& optimizer, const char* caller);

/// Steps an element-wise optimizer bucket by bucket: a bucket's parameters
/// as soon as its allreduce is done, while later buckets are still on the
/// wire, so the update overlaps the exchange. The same results as one whole
/// step.
class BucketSteps {
 public:
  BucketSteps(const std::vector<torch::Tensor>& params, const std::vector<Bucket>& buckets,
              torch::optim::Optimizer& optimizer);
  /// The optimizer step of bucket b's parameters (their .grad set).
  void step(std::size_t b);

 private:
  torch::optim::Optimizer* optimizer_;
  std::vector<std::vector<std::vector<torch::Tensor>>> per_bucket_;  // [bucket][group]
};

}  // namespace tnt::dp
