#include "train/step/clip_norm.h"

#include <torch/torch.h>

namespace tnt::train {

void clip_grad_norm_on_device(const std::vector<torch::Tensor>& params, double max_norm) {
  std::vector<torch::Tensor> norms;
  for (const auto& p : params) {
    if (p.grad().defined()) norms.push_back(p.grad().norm(2));
  }
  if (norms.empty()) return;
  scale_to_norm(params, norms.size() == 1 ? norms[0] : torch::stack(norms).norm(2), max_norm);
}

void scale_to_norm(const std::vector<torch::Tensor>& params, const torch::Tensor& total,
                   double max_norm) {
  const torch::Tensor coef = torch::clamp(max_norm / (total + 1e-6), c10::nullopt, 1.0);
  torch::NoGradGuard no_grad;
  for (const auto& p : params) {
    if (p.grad().defined()) p.grad().mul_(coef);
  }
}

}  // namespace tnt::train
