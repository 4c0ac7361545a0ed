#include "train/step/mixed_precision.h"

#include <algorithm>
#include <string>

#include <fmt/format.h>
#include <torch/torch.h>

#include <tarantella/base/error.h>
#include <tarantella/base/torch_compat.h>
#include <tarantella/base/logging.h>

#include "train/observe/host_reads.h"

namespace tnt::train {

std::string mixed_precision_problem(MixedPrecision precision, c10::Device device) {
  if (precision == MixedPrecision::Float16 && !device.is_cuda()) {
    return "mixed_precision float16 needs a GPU (the CPU's autocast is bfloat16): use "
           "tnt::MixedPrecision::BFloat16 (Python: mixed_precision='bfloat16') on the CPU";
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

bool all_finite(const std::vector<torch::Tensor>& tensors) {
  if (tensors.empty()) return true;
  // Each flag stays on its tensor's device: no host round trip per tensor.
  // On a GPU that is one synchronisation per step, not one per parameter.
  std::vector<torch::Tensor> flags;
  flags.reserve(tensors.size());
  const c10::Device device = tensors.front().device();
  for (const auto& t : tensors) flags.push_back(torch::isfinite(t).all().to(device));
  return read_flag(torch::stack(flags).all());
}

namespace {

// Gradients on one CUDA device in float32, float64 or float16: PyTorch's
// fused kernel checks and unscales them in one pass (GradScaler's), instead
// of two kernels per tensor for the check and one for the division. Its
// CUDA kernel has no bfloat16 (torch 2.11: "not implemented for
// 'BFloat16'"): a model with bfloat16 parameters takes the two-kernel path.
bool fused_unscale_applies(const std::vector<torch::Tensor>& grads) {
  if (grads.empty() || !grads.front().is_cuda()) return false;
  const c10::Device device = grads.front().device();
  return std::all_of(grads.begin(), grads.end(), [&](const torch::Tensor& g) {
    const auto dtype = g.scalar_type();
    return g.device() == device && g.layout() == torch::kStrided &&
           (dtype == torch::kFloat32 || dtype == torch::kFloat64 || dtype == torch::kFloat16);
  });
}

// Divides by `scale` (a power of two: the product with its inverse is the
// same) while checking; true when every value was finite. One read.
bool fused_check_and_unscale(std::vector<torch::Tensor>& grads, double scale) {
  torch::NoGradGuard no_grad;
  const auto options = torch::TensorOptions().dtype(torch::kFloat32).device(grads.front().device());
  torch::Tensor found_inf = torch::zeros({1}, options);
  const torch::Tensor inv_scale = torch::full({1}, 1.0 / scale, options);
  at::_amp_foreach_non_finite_check_and_unscale_(grads, found_inf, inv_scale);
  return !read_flag(found_inf);
}

}  // namespace

LossScaler::LossScaler(double initial_scale, std::int64_t growth_interval)
    : scale_(initial_scale), growth_interval_(growth_interval) {}

bool LossScaler::unscale_or_skip(std::vector<torch::Tensor>& trainable,
                                 const std::function<bool(bool)>& agree) {
  std::vector<torch::Tensor> grads;
  grads.reserve(trainable.size());
  for (const auto& p : trainable) {
    if (p.grad().defined()) grads.push_back(p.grad());
  }
  const bool fused = fused_unscale_applies(grads);
  bool finite = fused ? fused_check_and_unscale(grads, scale_) : all_finite(grads);
  if (agree) finite = agree(finite);
  if (!finite) {
    for (auto& p : trainable) p.mutable_grad() = torch::Tensor();
    scale_ /= 2;
    good_steps_ = 0;
    ++skipped_;
    log::info(fmt::format("mixed precision: gradients overflowed, step skipped on every rank; "
                          "loss scale lowered to {}",
                          scale_));
    if (scale_ < 1.0 && scale_ * 2 >= 1.0) {
      // Below 1 the scale no longer explains an overflow: the gradients are
      // not finite unscaled, and every step from here is skipped. Said once
      // per fall, at WARNING: the skips alone are INFO.
      log::warning(fmt::format(
          "mixed precision: the loss scale fell below 1 ({}), so the gradients are not finite "
          "even unscaled (NaN or inf from the data, the loss or a layer) and every step is "
          "skipped ({} so far): nothing trains. Check the inputs and the loss; "
          "TNT_LOG_LEVEL=INFO logs each skip",
          scale_, skipped_));
    }
    return false;
  }
  torch::NoGradGuard no_grad;
  // One multi-tensor kernel per dtype and device instead of one per tensor.
  if (!grads.empty() && !fused) at::_foreach_div_(grads, scale_);
  if (++good_steps_ >= growth_interval_) {
    scale_ *= 2;
    good_steps_ = 0;
  }
  return true;
}

}  // namespace tnt::train
