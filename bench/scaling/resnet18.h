// ResNet-18 (He et al. 2016) as torchvision builds it -- 7x7 stride-2 stem,
// max-pooling, four stages of two basic blocks, widths 64..512 -- with 10
// classes by default (1000, torchvision's, for the GPU check on 224x224), for the scaling benchmark's CNN on 32x32 images (11,181,642
// parameters, 44.7 MB of gradients a step). On 32x32 inputs the stem leaves
// 8x8 maps, so one image costs ~37 MFLOP forward: a step of 32 images takes
// a fraction of a second on one core while its gradient is half the MLP's.
// ddp_scaling.py defines the same network for PyTorch; keep the two in step.
#pragma once

#include <torch/torch.h>

namespace tnt_bench {

struct BasicBlockImpl : torch::nn::Module {
  BasicBlockImpl(int in, int out, int stride)
      : conv1(register_module("conv1", conv3x3(in, out, stride))),
        bn1(register_module("bn1", torch::nn::BatchNorm2d(out))),
        conv2(register_module("conv2", conv3x3(out, out, 1))),
        bn2(register_module("bn2", torch::nn::BatchNorm2d(out))) {
    if (stride != 1 || in != out) {
      downsample = register_module(
          "downsample",
          torch::nn::Sequential(
              torch::nn::Conv2d(torch::nn::Conv2dOptions(in, out, 1).stride(stride).bias(false)),
              torch::nn::BatchNorm2d(out)));
    }
  }

  static torch::nn::Conv2d conv3x3(int in, int out, int stride) {
    return torch::nn::Conv2d(
        torch::nn::Conv2dOptions(in, out, 3).stride(stride).padding(1).bias(false));
  }

  torch::Tensor forward(torch::Tensor x) {
    torch::Tensor y = torch::relu(bn1(conv1(x)));
    y = bn2(conv2(y));
    return torch::relu(y + (downsample ? downsample->forward(x) : x));
  }

  torch::nn::Conv2d conv1;
  torch::nn::BatchNorm2d bn1;
  torch::nn::Conv2d conv2;
  torch::nn::BatchNorm2d bn2;
  torch::nn::Sequential downsample{nullptr};
};
TORCH_MODULE(BasicBlock);

struct ResNet18Impl : torch::nn::Module {
  explicit ResNet18Impl(int classes = 10)
      : conv1(register_module(
            "conv1", torch::nn::Conv2d(
                         torch::nn::Conv2dOptions(3, 64, 7).stride(2).padding(3).bias(false)))),
        bn1(register_module("bn1", torch::nn::BatchNorm2d(64))),
        fc(register_module("fc", torch::nn::Linear(512, classes))) {
    const int widths[] = {64, 128, 256, 512};
    int in = 64;
    for (int s = 0; s < 4; ++s) {
      torch::nn::Sequential stage(BasicBlock(in, widths[s], s == 0 ? 1 : 2),
                                  BasicBlock(widths[s], widths[s], 1));
      stages.push_back(register_module("layer" + std::to_string(s + 1), stage));
      in = widths[s];
    }
  }

  torch::Tensor forward(torch::Tensor x) {
    x = torch::relu(bn1(conv1(x)));
    x = torch::max_pool2d(x, 3, 2, 1);
    for (auto& stage : stages) x = stage->forward(x);
    x = torch::adaptive_avg_pool2d(x, {1, 1}).flatten(1);
    return fc(x);  // logits
  }

  torch::nn::Conv2d conv1;
  torch::nn::BatchNorm2d bn1;
  std::vector<torch::nn::Sequential> stages;
  torch::nn::Linear fc;
};
TORCH_MODULE(ResNet18);

}  // namespace tnt_bench
