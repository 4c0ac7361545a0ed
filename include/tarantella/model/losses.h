// Losses: each maps (predictions, targets) of a batch to the MEAN loss over
// its samples (a 0-dim tensor). The trainer weights each rank's mean by the
// rank's share of the global batch, so the result equals serial training.
//
// Note: unlike Keras, the cross-entropy losses take logits by default
// (from_logits = true), the convention of PyTorch models; pass
// LossOptions().from_logits(false) for probabilities.
#pragma once

#include <functional>
#include <string>

#include <torch/types.h>

namespace tnt::losses {

/// Options shared by the losses.
/// Example: tnt::losses::BinaryCrossentropy(tnt::losses::LossOptions().from_logits(false))
struct LossOptions {
  LossOptions& from_logits(bool v) { from_logits_ = v; return *this; }
  LossOptions& delta(double v) { delta_ = v; return *this; }  ///< Huber
  bool from_logits_ = true;
  double delta_ = 1.0;
};

/// A named loss function returning the mean loss of a batch.
/// Example: tnt::losses::Loss("my_l1", [](auto p, auto t) { return (p - t).abs().mean(); })
struct Loss {
  using Fn = std::function<torch::Tensor(const torch::Tensor& y_pred, const torch::Tensor& y_true)>;
  Loss() = default;
  Loss(std::string name, Fn fn, std::string config = {})
      : name(std::move(name)), fn(std::move(fn)), config(std::move(config)) {}
  torch::Tensor operator()(const torch::Tensor& y_pred, const torch::Tensor& y_true) const {
    return fn(y_pred, y_true);
  }
  explicit operator bool() const { return static_cast<bool>(fn); }
  std::string name;
  Fn fn;
  /// {"class_name": ..., "config": {...}} for the built-in losses (so that
  /// a saved model can be recompiled by load_model); empty for a user loss.
  std::string config;
};

/// Integer class labels [B] against scores [B, C].
Loss SparseCategoricalCrossentropy(LossOptions options = LossOptions());
/// One-hot (or soft) labels [B, C] against scores [B, C].
Loss CategoricalCrossentropy(LossOptions options = LossOptions());
/// Labels in {0, 1} (float) against scores of the same shape.
Loss BinaryCrossentropy(LossOptions options = LossOptions());
Loss MeanSquaredError();
Loss MeanAbsoluteError();
Loss Huber(LossOptions options = LossOptions());

}  // namespace tnt::losses
