// Shared by the unit and multi-rank tests that compare trained weights with a
// serial run: the worst relative difference over tensors (each tensor's
// largest absolute difference over max(1, its largest magnitude)), and a
// small network for such comparisons. The tensors may be on different
// devices (a tnt::Model on a GPU against a serial run on the CPU): they are
// compared on the CPU, in float64.
#pragma once

#include <algorithm>
#include <vector>

#include <torch/torch.h>

namespace tnt_test {

inline double max_rel_diff(const std::vector<torch::Tensor>& a,
                           const std::vector<torch::Tensor>& b) {
  double worst = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const torch::Tensor x = a[i].detach().to(torch::kCPU, torch::kFloat64);
    const torch::Tensor y = b[i].detach().to(torch::kCPU, torch::kFloat64);
    const double scale = std::max(1.0, x.abs().max().item<double>());
    worst = std::max(worst, (x - y).abs().max().item<double>() / scale);
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
