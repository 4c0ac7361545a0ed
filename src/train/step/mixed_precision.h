// Private: mixed precision (a 16-bit forward, float32 weights). AutocastScope
// runs a forward pass under LibTorch's autocast; LossScaler is dynamic loss
// scaling as in torch.cuda.amp.GradScaler: the loss is multiplied by a scale
// before backward, and after the gradients are summed over the ranks a step
// whose gradients are not all finite is skipped and the scale halved; after
// `growth_interval` good steps in a row it doubles. The summed gradients are
// the same on every rank (an inf or NaN on one rank is in every rank's sum), so
// every rank skips the same steps and holds the same scale.
#pragma once

#include <functional>

#include <cstdint>
#include <vector>

#include <c10/core/Device.h>
#include <c10/core/ScalarType.h>
#include <torch/types.h>

#include <tarantella/base/mixed_precision.h>

namespace tnt::train {

/// Autocast for `precision` on `device` while it lives (nothing for None).
/// Throws for Float16 on the CPU, which LibTorch 1.13 does not autocast.
class AutocastScope {
 public:
  AutocastScope(MixedPrecision precision, c10::Device device);
  ~AutocastScope();
  AutocastScope(const AutocastScope&) = delete;
  AutocastScope& operator=(const AutocastScope&) = delete;

 private:
  bool active_ = false;
  c10::DeviceType device_type_ = c10::DeviceType::CPU;
  bool previous_enabled_ = false;
  c10::ScalarType previous_dtype_ = c10::ScalarType::Float;
};

/// Whether `precision` can run on `device`; empty if so, else why and the fix.
std::string mixed_precision_problem(MixedPrecision precision, c10::Device device);

/// True when every element of every tensor is finite; true for none. One
/// host synchronisation in all (one fused reduction over per-tensor flags
/// that stay on the device), not one per tensor.
bool all_finite(const std::vector<torch::Tensor>& tensors);

class LossScaler {
 public:
  explicit LossScaler(double initial_scale = 65536.0, std::int64_t growth_interval = 2000);
  double scale() const { return scale_; }
  /// Steps skipped so far.
  std::int64_t skipped() const { return skipped_; }
  /// After the summed gradients of `trainable` are in .grad: if all are
  /// finite, divides them by the scale and returns true; else clears them,
  /// halves the scale and returns false (skip the optimizer step).
  /// `agree`, if given, turns this rank's "all finite" into every rank's
  /// (when each rank holds only a shard of the gradients).
  bool unscale_or_skip(std::vector<torch::Tensor>& trainable,
                       const std::function<bool(bool)>& agree = nullptr);
  /// The counters, for checkpoints: good steps in a row since the last change.
  std::int64_t good_steps() const { return good_steps_; }
  void restore(double scale, std::int64_t good_steps, std::int64_t skipped) {
    scale_ = scale;
    good_steps_ = good_steps;
    skipped_ = skipped;
  }

 private:
  double scale_;
  std::int64_t growth_interval_;
  std::int64_t good_steps_ = 0;
  std::int64_t skipped_ = 0;
};

}  // namespace tnt::train
