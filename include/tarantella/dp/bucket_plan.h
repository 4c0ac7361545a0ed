// Tensor fusion: which parameters share a gradient bucket. Planned once,
// before the first step, from the parameters' registration order: gradients
// appear in backward roughly in reverse registration order (the last layer
// first), so buckets are filled in that order and the first bucket can be
// sent while backward is still computing the earlier layers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include <torch/types.h>

namespace tnt::dp {

/// One fused buffer of gradients of a single dtype.
struct Bucket {
  std::vector<std::size_t> params;     ///< indices into the parameter list
  std::vector<std::int64_t> offsets;   ///< element offset of each in the buffer
  std::int64_t numel = 0;              ///< elements of all its gradients
  torch::ScalarType dtype = torch::kFloat32;
};

/// Plans buckets over `params` (registration order): walk them in reverse,
/// close the current bucket when it holds `threshold_bytes` or more, or when
/// the dtype or the device changes. A threshold of 0 gives one bucket per tensor.
///
/// Example:
///   auto buckets = tnt::dp::plan_buckets(params, 32 * 1024);
std::vector<Bucket> plan_buckets(const std::vector<torch::Tensor>& params,
                                 std::size_t threshold_bytes);

}  // namespace tnt::dp
