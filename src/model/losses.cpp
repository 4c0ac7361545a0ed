#include <tarantella/model/losses.h>
#include <tarantella/runtime/error.h>
#include <torch/torch.h>

#include "model/describe.h"

namespace tnt::losses {
namespace F = torch::nn::functional;

namespace {
void check_same_shape(const char* loss, const torch::Tensor& p, const torch::Tensor& t) {
  TNT_CHECK(p.sizes() == t.sizes(), loss, ": predictions ", p.sizes(), " and targets ", t.sizes(),
            " must have the same shape");
}
Loss described(Loss loss, std::string config) {
  loss.config = std::move(config);
  return loss;
}
}  // namespace

Loss SparseCategoricalCrossentropy(LossOptions o) {
  return described(Loss{"sparse_categorical_crossentropy",
                        [o](const torch::Tensor& p, const torch::Tensor& t) {
                          TNT_CHECK(p.dim() == t.dim() + 1,
                                    "sparse_categorical_crossentropy: predictions ", p.sizes(),
                                    " need one dimension more than the integer targets ", t.sizes(),
                                    " (scores [B, C], labels [B])");
                          const torch::Tensor labels = t.to(torch::kLong);
                          if (o.from_logits_) return F::cross_entropy(p, labels);
                          return F::nll_loss(p.clamp_min(1e-7).log(), labels);
                        }},
                   describe("SparseCategoricalCrossentropy", {{"from_logits", o.from_logits_}}));
}

Loss CategoricalCrossentropy(LossOptions o) {
  return described(Loss{"categorical_crossentropy",
                        [o](const torch::Tensor& p, const torch::Tensor& t) {
                          check_same_shape("categorical_crossentropy", p, t);
                          const torch::Tensor log_p =
                              o.from_logits_ ? torch::log_softmax(p, -1) : p.clamp_min(1e-7).log();
                          return -(t * log_p).sum(-1).mean();
                        }},
                   describe("CategoricalCrossentropy", {{"from_logits", o.from_logits_}}));
}

Loss BinaryCrossentropy(LossOptions o) {
  return described(Loss{"binary_crossentropy",
                        [o](const torch::Tensor& p, const torch::Tensor& t) {
                          check_same_shape("binary_crossentropy", p, t);
                          const torch::Tensor target = t.to(p.scalar_type());
                          if (o.from_logits_) return F::binary_cross_entropy_with_logits(p, target);
                          return F::binary_cross_entropy(p.clamp(1e-7, 1 - 1e-7), target);
                        }},
                   describe("BinaryCrossentropy", {{"from_logits", o.from_logits_}}));
}

Loss MeanSquaredError() {
  return described(Loss{"mean_squared_error",
                        [](const torch::Tensor& p, const torch::Tensor& t) {
                          check_same_shape("mean_squared_error", p, t);
                          return F::mse_loss(p, t.to(p.scalar_type()));
                        }},
                   describe("MeanSquaredError", nlohmann::json::object()));
}

Loss MeanAbsoluteError() {
  return described(Loss{"mean_absolute_error",
                        [](const torch::Tensor& p, const torch::Tensor& t) {
                          check_same_shape("mean_absolute_error", p, t);
                          return F::l1_loss(p, t.to(p.scalar_type()));
                        }},
                   describe("MeanAbsoluteError", nlohmann::json::object()));
}

Loss Huber(LossOptions o) {
  return described(Loss{"huber",
                        [o](const torch::Tensor& p, const torch::Tensor& t) {
                          check_same_shape("huber", p, t);
                          return F::huber_loss(p, t.to(p.scalar_type()),
                                               F::HuberLossFuncOptions().delta(o.delta_));
                        }},
                   describe("Huber", {{"delta", o.delta_}}));
}

}  // namespace tnt::losses
