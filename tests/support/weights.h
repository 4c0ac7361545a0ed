// Shared by the unit and multi-rank tests that compare trained weights with a
// serial run: the worst relative difference over tensors (each tensor's
// largest absolute difference over max(1, its largest magnitude)), and a
// small network for such comparisons.
#pragma once

#include <algorithm>
#include <vector>

#include <torch/torch.h>

namespace tnt_test {

inline double max_rel_diff(const std::vector<torch::Tensor>& a,
                           const std::vector<torch::Tensor>& b) {
  double worst = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double scale = std::max(1.0, a[i].abs().max().item<double>());
    worst = std::max(worst, (a[i] - b[i]).abs().max().item<double>() / scale);
  }
  return worst;
}

/// 6 -> 16 -> 4 with tanh: small enough for many runs, deep enough for two buckets.
struct SmallNetImpl : torch::nn::Module {
  SmallNetImpl() {
    fc1 = register_module("fc1", torch::nn::Linear(6, 16));
    fc2 = register_module("fc2", torch::nn::Linear(16, 4));
  }
  torch::Tensor forward(const torch::Tensor& x) { return fc2(torch::tanh(fc1(x))); }
  torch::nn::Linear fc1{nullptr}, fc2{nullptr};
};
TORCH_MODULE(SmallNet);

}  // namespace tnt_test
