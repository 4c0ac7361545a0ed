// One layer's output as a network run layer by layer keeps it
// (ModuleAdapter::forward_by_layer).
#pragma once

#include <vector>

#include <torch/types.h>

namespace tnt {

/// A layer's output, with the parameters of the layers that made it (this
/// layer, and any before it whose output was not a tensor).
struct LayerOutput {
  torch::Tensor output;
  std::vector<torch::Tensor> parameters;
};

}  // namespace tnt
