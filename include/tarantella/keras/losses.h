// Losses: each maps (predictions, targets) of a batch to the MEAN loss over
// its samples (a 0-dim tensor). The trainer weights each rank's mean by the
// rank's share of the global batch, so the result equals serial training.
//
// Note: unlike Keras, the cross-entropy losses take logits by default
// (from_logits = true), the convention of PyTorch models; pass
// LossOptions().from_logits(false) for probabilities. A network that ends in
// log_softmax (PyTorch's C++ MNIST example) outputs log-probabilities: train
// it with NLLLoss(). With from_logits(false) the cross-entropy losses check
// that their input lies in [0, 1] and throw a tnt::Error naming the observed
// range otherwise, instead of silently taking the log of negative values.
#pragma once

#include <tarantella/base/arg.h>

#include <functional>
#include <optional>
#include <string>

#include <nlohmann/json_fwd.hpp>
#include <torch/types.h>

namespace tnt::losses {

/// Options shared by the losses.
/// Example: tnt::losses::BinaryCrossentropy(tnt::losses::LossOptions().from_logits(false))
struct LossOptions {
  /// true (default): the outputs are logits; false: probabilities.
  TNT_ARG(bool, from_logits) = true;
  /// Huber's threshold.
  TNT_ARG(double, delta) = 1.0;
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
  /// Where a single-output binary prediction of a model trained with this
  /// loss decides between 0 and 1: 0 for logits (BinaryCrossentropy's
  /// default), 0.5 for probabilities; none when the loss does not say.
  /// compile() gives it to Accuracy() and BinaryAccuracy() (see metrics.h).
  std::optional<double> binary_threshold;
};

/// Input: logits [B, C] (raw scores, the default), or with from_logits(false)
/// probabilities [B, C] (softmax outputs; values outside [0, 1] throw a
/// tnt::Error). Target: integer class indices [B] in [0, C) (any dtype,
/// converted to int64).
Loss SparseCategoricalCrossentropy(LossOptions options = LossOptions());
/// Input: logits [B, C] (the default), or with from_logits(false)
/// probabilities [B, C] (values outside [0, 1] throw a tnt::Error).
/// Target: one-hot or soft labels [B, C] (each row a distribution).
Loss CategoricalCrossentropy(LossOptions options = LossOptions());
/// Input: logits (the default), or with from_logits(false) probabilities
/// (sigmoid outputs; values outside [0, 1] throw a tnt::Error), any shape.
/// Target: labels in [0, 1] (float, usually 0 or 1) of the same shape.
Loss BinaryCrossentropy(LossOptions options = LossOptions());
/// Negative log-likelihood, for networks that end in log_softmax.
/// Input: log-probabilities [B, C] (log_softmax outputs, all <= 0; a positive
/// value throws a tnt::Error, since raw scores belong to
/// SparseCategoricalCrossentropy()). Target: integer class indices [B] in
/// [0, C) (converted to int64). The mean over the batch, as
/// torch::nn::functional::nll_loss.
/// Example: model.compile(tnt::CompileOptions().optimizer(...).loss(tnt::losses::NLLLoss()))
Loss NLLLoss();
/// Input: values (any shape). Target: values of the same shape.
Loss MeanSquaredError();
/// Input: values (any shape). Target: values of the same shape.
Loss MeanAbsoluteError();
/// Input: values (any shape). Target: values of the same shape; `delta`
/// (LossOptions().delta) is where the loss turns from quadratic to linear.
Loss Huber(LossOptions options = LossOptions());

/// Rebuilds a built-in loss from its description (Loss::config, parsed); a
/// field left out takes LossOptions' default. An unknown class name is a
/// tnt::Error naming it and the registered ones.
/// Example: auto l = tnt::losses::from_config(nlohmann::json::parse(Huber().config));
Loss from_config(const nlohmann::json& description);
/// The loss a name stands for, with its defaults, as Keras's losses.get:
/// a class name or Keras's name ("mse"). An unknown name is a
/// tnt::ArgumentError naming it and every known name.
/// Example: auto l = tnt::losses::get("mse");
Loss get(const std::string& name);

}  // namespace tnt::losses
