// ResNet (He et al., "Deep Residual Learning for Image Recognition", 2016) as
// LibTorch modules, in two families:
//  * ImageNet: a 7x7 stride-2 stem and max-pooling, then four stages of
//    basic blocks (ResNet-18) or bottleneck blocks (ResNet-50), widths 64 to
//    512 (x4 for bottlenecks); global average pooling makes any input size
//    from 32x32 up work (224x224 is the reference).
//  * CIFAR: a 3x3 stem and three stages of basic blocks, widths 16, 32, 64,
//    for 32x32 inputs (ResNet-20 = 3 blocks per stage, depth 6n+2).
// Parameter names follow torchvision (conv1, bn1, layer1.0.conv1, ...,
// downsample.0, fc), so its state_dicts load with tnt::Model::load_weights.
// Bottlenecks stride in the 3x3 convolution (ResNet v1.5, as torchvision),
// and the last BatchNorm of every residual branch starts at zero, so every
// block starts as the identity: this is what lets large global batches train
// with a large learning rate (Goyal et al. 2017). The normalization layers
// are LibTorch's BatchNorm2d (statistics of each rank's micro-batch) or, with
// ResNetOptions::sync_batchnorm, tnt::nn::SyncBatchNorm (statistics of the
// global batch); both have the same parameter and buffer names.
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/modules/container/any.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>

#include <string>
#include <vector>

namespace resnet_example {

/// Which residual block a ResNet stacks.
enum class BlockKind { Basic, Bottleneck };

/// The shape of a ResNet.
///
/// Example:
///   ResNet net(ResNetOptions(BlockKind::Basic, {2, 2, 2, 2}, {64, 128, 256, 512}));  // ResNet-18
struct ResNetOptions {
  ResNetOptions(BlockKind block, std::vector<int> blocks_per_stage, std::vector<int> stage_widths)
      : block_(block),
        blocks_per_stage_(std::move(blocks_per_stage)),
        stage_widths_(std::move(stage_widths)) {}
  /// Output classes of the final linear layer.
  ResNetOptions& num_classes(int v) {
    num_classes_ = v;
    return *this;
  }
  /// true: 3x3 stride-1 stem, no max-pooling (CIFAR-size inputs).
  ResNetOptions& small_inputs(bool v) {
    small_inputs_ = v;
    return *this;
  }
  /// Start the last BatchNorm of every residual branch at zero.
  ResNetOptions& zero_init_residual(bool v) {
    zero_init_residual_ = v;
    return *this;
  }
  /// Normalize with the statistics of the global batch (SyncBatchNorm).
  ResNetOptions& sync_batchnorm(bool v) {
    sync_batchnorm_ = v;
    return *this;
  }

  BlockKind block_;
  std::vector<int> blocks_per_stage_;
  std::vector<int> stage_widths_;
  int num_classes_ = 1000;
  bool small_inputs_ = false;
  bool zero_init_residual_ = true;
  bool sync_batchnorm_ = false;
};

/// A ResNet: input [N, 3, H, W] float, output logits [N, num_classes].
///
/// Example:
///   ResNet net = make_resnet("resnet50", 1000);
///   torch::Tensor logits = net->forward(torch::randn({2, 3, 224, 224}));
class ResNetImpl : public torch::nn::Module {
 public:
  explicit ResNetImpl(const ResNetOptions& options);
  torch::Tensor forward(torch::Tensor x);
  /// The same network as a Sequential of blocks, for pipeline stages
  /// (tnt::PipelineOptions): "stem" (conv1, bn1, ReLU, max-pooling),
  /// every residual block in order ("layer1_0", "layer1_1", ...), "head"
  /// (global average pooling, fc). It shares this network's layers (the
  /// same weights), under the Sequential's names ("stem.conv1.weight",
  /// "layer2_0.downsample.0.weight", "head.fc.weight"), and computes the
  /// same function as forward().
  torch::nn::Sequential blocks();

 private:
  bool small_inputs_;
  torch::nn::Conv2d conv1_{nullptr};
  torch::nn::AnyModule bn1_;  // BatchNorm2d or SyncBatchNorm
  std::vector<torch::nn::Sequential> stages_;
  torch::nn::Linear fc_{nullptr};
};
TORCH_MODULE(ResNet);

/// The models of the tutorial by name: "resnet50", "resnet18" (ImageNet
/// family) or "cifar" (ResNet-20). Throws std::invalid_argument for others.
ResNet make_resnet(const std::string& name, int num_classes, bool sync_batchnorm = false);

/// The input size a model is meant for: 32 for "cifar", 224 otherwise.
int default_image_size(const std::string& name);

}  // namespace resnet_example
