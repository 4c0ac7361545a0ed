#include "resnet_model.h"

#include <tarantella/keras/sync_batchnorm.h>
#include <torch/torch.h>

#include <stdexcept>

namespace resnet_example {
namespace {

namespace nn = torch::nn;

nn::Conv2d conv(int in, int out, int kernel, int stride) {
  return nn::Conv2d(
      nn::Conv2dOptions(in, out, kernel).stride(stride).padding(kernel / 2).bias(false));
}

// [snippet:resnet_norm_layer]
// The normalization layer (torchvision's norm_layer): LibTorch's BatchNorm2d
// normalizes with each rank's micro-batch, Tarantella's drop-in
// SyncBatchNorm with the global batch. Held as an AnyModule, so one member
// serves both.
nn::AnyModule make_norm(int channels, bool sync) {
  if (sync) return nn::AnyModule(tnt::nn::SyncBatchNorm(channels));
  return nn::AnyModule(nn::BatchNorm2d(channels));
}
// [end]

// The shortcut of a block that changes shape: a strided 1x1 convolution and
// BatchNorm (projection shortcut, "option B" of the paper). Empty otherwise.
nn::Sequential make_downsample(int in, int out, int stride, bool sync) {
  if (stride == 1 && in == out) return nn::Sequential(nullptr);
  nn::Sequential downsample(conv(in, out, 1, stride));
  downsample->push_back(make_norm(out, sync));
  return downsample;
}

// Both block kinds: a residual branch of convolutions, each followed by
// BatchNorm (ReLU in between), added to the (projected) input.
class ResidualBlockImpl : public nn::Module {
 public:
  ResidualBlockImpl(BlockKind kind, int in, int width, int stride, bool zero_init, bool sync) {
    const int out = kind == BlockKind::Basic ? width : 4 * width;
    // Basic: 3x3 (stride), 3x3. Bottleneck: 1x1 reduce, 3x3 (stride), 1x1 expand.
    std::vector<std::pair<int, int>> layers;  // (kernel, stride)
    std::vector<int> channels;
    if (kind == BlockKind::Basic) {
      layers = {{3, stride}, {3, 1}};
      channels = {in, width, out};
    } else {
      layers = {{1, 1}, {3, stride}, {1, 1}};
      channels = {in, width, width, out};
    }
    for (std::size_t i = 0; i < layers.size(); ++i) {
      const std::string n = std::to_string(i + 1);
      convs_.push_back(register_module(
          "conv" + n, conv(channels[i], channels[i + 1], layers[i].first, layers[i].second)));
      bns_.push_back(make_norm(channels[i + 1], sync));
      register_module("bn" + n, bns_.back().ptr());
    }
    if (zero_init) nn::init::zeros_(bns_.back().ptr()->named_parameters(false)["weight"]);
    downsample_ = make_downsample(in, out, stride, sync);
    if (downsample_) register_module("downsample", downsample_);
  }

  torch::Tensor forward(torch::Tensor x) {
    torch::Tensor y = x;
    for (std::size_t i = 0; i < convs_.size(); ++i) {
      y = bns_[i].forward(convs_[i]->forward(y));
      if (i + 1 < convs_.size()) y = torch::relu(y);
    }
    return torch::relu(y + (downsample_ ? downsample_->forward(x) : x));
  }

 private:
  std::vector<nn::Conv2d> convs_;
  std::vector<nn::AnyModule> bns_;
  nn::Sequential downsample_{nullptr};
};
TORCH_MODULE(ResidualBlock);

// blocks()' first and last block: the stem and the head, over the
// ResNet's own layers.
class StemImpl : public nn::Module {
 public:
  StemImpl(nn::Conv2d conv1, nn::AnyModule bn1, bool small_inputs)
      : conv1_(register_module("conv1", conv1)), bn1_(bn1), small_inputs_(small_inputs) {
    register_module("bn1", bn1_.ptr());
  }
  torch::Tensor forward(torch::Tensor x) {
    x = torch::relu(bn1_.forward(conv1_->forward(x)));
    if (!small_inputs_) x = torch::max_pool2d(x, /*kernel_size=*/3, /*stride=*/2, /*padding=*/1);
    return x;
  }

 private:
  nn::Conv2d conv1_;
  nn::AnyModule bn1_;
  bool small_inputs_;
};
TORCH_MODULE(Stem);

class HeadImpl : public nn::Module {
 public:
  explicit HeadImpl(nn::Linear fc) : fc_(register_module("fc", fc)) {}
  torch::Tensor forward(torch::Tensor x) { return fc_->forward(x.mean({2, 3})); }

 private:
  nn::Linear fc_;
};
TORCH_MODULE(Head);

}  // namespace

ResNetImpl::ResNetImpl(const ResNetOptions& o) : small_inputs_(o.small_inputs_) {
  if (o.blocks_per_stage_.size() != o.stage_widths_.size() || o.blocks_per_stage_.empty()) {
    throw std::invalid_argument("ResNetOptions: give one width per stage (got " +
                                std::to_string(o.blocks_per_stage_.size()) + " stages and " +
                                std::to_string(o.stage_widths_.size()) + " widths)");
  }
  const int stem_width = o.stage_widths_.front();
  conv1_ = register_module("conv1",
                           o.small_inputs_ ? conv(3, stem_width, 3, 1) : conv(3, stem_width, 7, 2));
  bn1_ = make_norm(stem_width, o.sync_batchnorm_);
  register_module("bn1", bn1_.ptr());
  const int expansion = o.block_ == BlockKind::Basic ? 1 : 4;
  int channels = stem_width;
  for (std::size_t s = 0; s < o.stage_widths_.size(); ++s) {
    nn::Sequential stage;
    for (int b = 0; b < o.blocks_per_stage_[s]; ++b) {
      const int stride = (s > 0 && b == 0) ? 2 : 1;  // halve the resolution per stage
      stage->push_back(
          ResidualBlock(o.block_, channels, o.stage_widths_[s], stride, o.zero_init_residual_,
                        o.sync_batchnorm_));
      channels = o.stage_widths_[s] * expansion;
    }
    stages_.push_back(register_module("layer" + std::to_string(s + 1), stage));
  }
  fc_ = register_module("fc", nn::Linear(channels, o.num_classes_));

  // He initialization for the convolutions (torchvision's choice); the
  // residual branches' last BatchNorm was zeroed above when asked.
  for (auto& module : modules(/*include_self=*/false)) {
    if (auto* c = module->as<nn::Conv2d>()) {
      nn::init::kaiming_normal_(c->weight, 0.0, torch::kFanOut, torch::kReLU);
    }
  }
}

// [snippet:resnet_blocks]
nn::Sequential ResNetImpl::blocks() {
  nn::Sequential net;
  net->push_back("stem", Stem(conv1_, bn1_, small_inputs_));
  for (std::size_t s = 0; s < stages_.size(); ++s) {
    std::size_t b = 0;
    for (const auto& block : *stages_[s]) {
      net->push_back("layer" + std::to_string(s + 1) + "_" + std::to_string(b++), block);
    }
  }
  net->push_back("head", Head(fc_));
  return net;
}
// [end]

torch::Tensor ResNetImpl::forward(torch::Tensor x) {
  x = torch::relu(bn1_.forward(conv1_->forward(x)));
  if (!small_inputs_) x = torch::max_pool2d(x, /*kernel_size=*/3, /*stride=*/2, /*padding=*/1);
  for (auto& stage : stages_) x = stage->forward(x);
  x = x.mean({2, 3});  // global average pooling
  return fc_->forward(x);
}

ResNet make_resnet(const std::string& name, int num_classes, bool sync_batchnorm) {
  if (name == "resnet50") {
    return ResNet(ResNetOptions(BlockKind::Bottleneck, {3, 4, 6, 3}, {64, 128, 256, 512})
                      .num_classes(num_classes)
                      .sync_batchnorm(sync_batchnorm));
  }
  if (name == "resnet18") {
    return ResNet(ResNetOptions(BlockKind::Basic, {2, 2, 2, 2}, {64, 128, 256, 512})
                      .num_classes(num_classes)
                      .sync_batchnorm(sync_batchnorm));
  }
  if (name == "cifar") {  // ResNet-20
    return ResNet(ResNetOptions(BlockKind::Basic, {3, 3, 3}, {16, 32, 64})
                      .num_classes(num_classes)
                      .small_inputs(true)
                      .sync_batchnorm(sync_batchnorm));
  }
  throw std::invalid_argument("unknown model '" + name + "': use resnet50, resnet18 or cifar");
}

int default_image_size(const std::string& name) { return name == "cifar" ? 32 : 224; }

}  // namespace resnet_example
