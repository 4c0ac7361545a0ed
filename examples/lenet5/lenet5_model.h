// LeNet-5 as a LibTorch module: the classic architecture, so results compare
// with other implementations (conv1 1->6 5x5 pad 2, ReLU, max-pool 2; conv2
// 6->16 5x5, ReLU, max-pool 2; fc1 400->120, fc2 120->84, fc3 84->10 logits).
// Shared by the example and bench/train_step.
#pragma once

#include <torch/torch.h>

namespace tnt_examples {

struct LeNet5Impl : torch::nn::Module {
  LeNet5Impl()
      : conv1(register_module("conv1",
                              torch::nn::Conv2d(torch::nn::Conv2dOptions(1, 6, 5).padding(2)))),
        conv2(register_module("conv2", torch::nn::Conv2d(6, 16, 5))),
        fc1(register_module("fc1", torch::nn::Linear(400, 120))),
        fc2(register_module("fc2", torch::nn::Linear(120, 84))),
        fc3(register_module("fc3", torch::nn::Linear(84, 10))) {}

  torch::Tensor forward(torch::Tensor x) {
    x = torch::max_pool2d(torch::relu(conv1(x)), 2);
    x = torch::max_pool2d(torch::relu(conv2(x)), 2);
    x = x.flatten(1);
    x = torch::relu(fc1(x));
    x = torch::relu(fc2(x));
    return fc3(x);  // logits
  }

  torch::nn::Conv2d conv1, conv2;
  torch::nn::Linear fc1, fc2, fc3;
};
TORCH_MODULE(LeNet5);

}  // namespace tnt_examples
