#include "dp/foreach_sgd.h"

#include <memory>
#include <vector>

#include <ATen/ATen.h>
#include <torch/torch.h>

#include <tarantella/base/torch_compat.h>

namespace tnt::dp {

torch::Tensor ForeachSGD::step(LossClosure closure) {
  torch::NoGradGuard no_grad;
  torch::Tensor loss;
  if (closure != nullptr) {
    at::AutoGradMode enable_grad(true);
    loss = closure();
  }
  for (auto& group : param_groups()) {
    const auto& o = static_cast<const torch::optim::SGDOptions&>(group.options());
    std::vector<torch::Tensor> params;
    std::vector<torch::Tensor> grads;
    for (const auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      params.push_back(p);
      grads.push_back(p.grad());
    }
    if (params.empty()) continue;
    // d_p = grad (+ weight_decay * p)
    std::vector<torch::Tensor> d =
        o.weight_decay() != 0 ? at::_foreach_add(grads, params, o.weight_decay()) : grads;
    if (o.momentum() != 0) {
      // buf = d_p at the first step; then buf = momentum * buf + (1 - dampening) * d_p
      std::vector<torch::Tensor> bufs(params.size());
      std::vector<torch::Tensor> kept;
      std::vector<torch::Tensor> kept_d;
      for (std::size_t i = 0; i < params.size(); ++i) {
        const auto key = compat::optimizer_state_key(params[i]);
        auto found = state().find(key);
        if (found == state().end()) {
          bufs[i] = torch::clone(d[i]).detach();
          auto fresh = std::make_unique<torch::optim::SGDParamState>();
          fresh->momentum_buffer(bufs[i]);
          state()[key] = std::move(fresh);
        } else {
          bufs[i] =
              static_cast<torch::optim::SGDParamState&>(*found->second).momentum_buffer();
          kept.push_back(bufs[i]);
          kept_d.push_back(d[i]);
        }
      }
      if (!kept.empty()) {
        at::_foreach_mul_(kept, o.momentum());
        at::_foreach_add_(kept, kept_d, 1 - o.dampening());
      }
      d = o.nesterov() ? at::_foreach_add(d, bufs, o.momentum()) : bufs;
    }
    at::_foreach_add_(params, d, -1 * o.lr());
  }
  return loss;
}

}  // namespace tnt::dp
