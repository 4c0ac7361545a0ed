// The two networks of the training-step benchmark and its synthetic data.
// ddp_bench.py defines the same networks in Python PyTorch; keep the two in
// step. LeNet-5 is the architecture of examples/lenet5; the MLP
// 784-4096-4096-10 has 20,037,642 parameters, enough that the gradient
// allreduce (80 MB per step) matters.
#pragma once

#include <cstdint>
#include <string>
#include <utility>

#include <torch/torch.h>

#include "lenet5_model.h"

namespace tnt_bench {

using tnt_examples::LeNet5;  // examples/lenet5/lenet5_model.h

struct MlpImpl : torch::nn::Module {
  MlpImpl()
      : fc1(register_module("fc1", torch::nn::Linear(784, 4096))),
        fc2(register_module("fc2", torch::nn::Linear(4096, 4096))),
        fc3(register_module("fc3", torch::nn::Linear(4096, 10))) {}

  torch::Tensor forward(torch::Tensor x) {
    x = torch::relu(fc1(x));
    x = torch::relu(fc2(x));
    return fc3(x);  // logits
  }

  torch::nn::Linear fc1, fc2, fc3;
};
TORCH_MODULE(Mlp);

/// Synthetic samples held in memory: Fashion-MNIST-like images [n, 1, 28, 28]
/// for LeNet, 784 features [n, 784] for the MLP, labels int64 in [0, 10).
/// Drawn from LibTorch's CPU generator with `seed`, exactly as ddp_bench.py
/// draws them, so every variant trains on the same numbers.
inline std::pair<torch::Tensor, torch::Tensor> synthetic_data(const std::string& model,
                                                              std::int64_t n,
                                                              std::uint64_t seed) {
  torch::manual_seed(seed);
  torch::Tensor x = model == "lenet" ? torch::randn({n, 1, 28, 28}) : torch::randn({n, 784});
  torch::Tensor y = torch::randint(0, 10, {n}, torch::kLong);
  return {x, y};
}

}  // namespace tnt_bench
