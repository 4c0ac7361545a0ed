// Private: LibTorch's SGD, stepped with multi-tensor (_foreach_) kernels.
//
// torch::optim::SGD updates one parameter at a time: three kernels per
// parameter (momentum, update), about 190 launches for ResNet-18, which the
// host issues one after the other. Where the step waits for the GPU first
// (the fp16 loss scaler's verdict), those launches are the GPU's idle time.
// torch.optim.SGD on CUDA runs the same arithmetic as a handful of
// multi-tensor kernels; so does this. The state (momentum_buffer per
// parameter), the options and the checkpoint format are optim::SGD's, and
// every element gets the same operations in the same order, so results are
// bitwise those of optim::SGD (tests/unit/foreach_sgd_test.cpp). On the CPU
// the _foreach_ ops run per tensor.
#pragma once

#include <torch/optim/sgd.h>

namespace tnt::dp {

class ForeachSGD final : public torch::optim::SGD {
 public:
  using torch::optim::SGD::SGD;
  torch::Tensor step(LossClosure closure = nullptr) override;
};

}  // namespace tnt::dp
