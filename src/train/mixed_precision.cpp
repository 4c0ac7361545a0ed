#include "train/mixed_precision.h"

#include <string>

#include <fmt/format.h>
#include <torch/torch.h>

#include <tarantella/base/error.h>
#include <tarantella/base/torch_compat.h>
#include <tarantella/base/logging.h>

namespace tnt::train {

std::string mixed_precision_problem(MixedPrecision precision, c10::Device device) {
  if (precision == MixedPrecision::Float16 && !device.is_cuda()) {
    return "mixed_precision(Float16) needs a GPU: LibTorch 1.13 autocasts the CPU to bfloat16 "
           "only; use tnt::MixedPrecision::BFloat16 on the CPU";
  }
  return {};
}

AutocastScope::AutocastScope(MixedPrecision precision, c10::Device device) {
  if (precision == MixedPrecision::None) return;
  const std::string problem = mixed_precision_problem(precision, device);
  TNT_CHECK(problem.empty(), problem);
  const c10::ScalarType dtype =
      precision == MixedPrecision::BFloat16 ? c10::ScalarType::BFloat16 : c10::ScalarType::Half;
  device_type_ = device.type();
  previous_enabled_ = compat::autocast_enabled(device_type_);
  previous_dtype_ = compat::autocast_dtype(device_type_);
  compat::set_autocast_dtype(device_type_, dtype);
  compat::set_autocast_enabled(device_type_, true);
  at::autocast::increment_nesting();
  active_ = true;
}

AutocastScope::~AutocastScope() {
  if (!active_) return;
  // The cast weights are cached per scope, as torch.autocast does.
  if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
  compat::set_autocast_enabled(device_type_, previous_enabled_);
  compat::set_autocast_dtype(device_type_, previous_dtype_);
}

LossScaler::LossScaler(double initial_scale, std::int64_t growth_interval)
    : scale_(initial_scale), growth_interval_(growth_interval) {}

bool LossScaler::unscale_or_skip(std::vector<torch::Tensor>& trainable,
                                 const std::function<bool(bool)>& agree) {
  bool finite = true;
  for (const auto& p : trainable) {
    if (p.grad().defined() && !p.grad().isfinite().all().item<bool>()) {
      finite = false;
      break;
    }
  }
  if (agree) finite = agree(finite);
  if (!finite) {
    for (auto& p : trainable) p.mutable_grad() = torch::Tensor();
    scale_ /= 2;
    good_steps_ = 0;
    ++skipped_;
    log::info(fmt::format("mixed precision: gradients overflowed, step skipped on every rank; "
                          "loss scale lowered to {}",
                          scale_));
    return false;
  }
  torch::NoGradGuard no_grad;
  for (auto& p : trainable) {
    if (p.grad().defined()) p.mutable_grad().div_(scale_);
  }
  if (++good_steps_ >= growth_interval_) {
    scale_ *= 2;
    good_steps_ = 0;
  }
  return true;
}

}  // namespace tnt::train
