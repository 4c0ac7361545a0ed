// Metrics keep a STATE (e.g. correct predictions and samples) whose
// increments are summed over ranks and steps; the value is computed from the
// global sum (correct / total). That makes distributed metrics exact —
// never a mean of per-rank means.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>
#include <torch/types.h>

namespace tnt::metrics {

/// A metric: its name, the size of its state, how a batch changes the state
/// (returns `state_size` float64 values), and the value of a state.
///
/// Example (a user metric, mean over samples of a per-sample value):
///   auto m = tnt::metrics::Metric::mean_of("abs_error",
///       [](const torch::Tensor& p, const torch::Tensor& t) { return (p - t).abs(); });
struct Metric {
  using Update = std::function<torch::Tensor(const torch::Tensor& y_pred, const torch::Tensor& y_true)>;
  using Result = std::function<double(const std::vector<double>& state)>;

  std::string name;
  std::int64_t state_size = 2;
  Update update;
  Result result;
  /// {"class_name": ..., "config": {...}} for the built-in metrics (so that
  /// a saved model can be recompiled by load_model); empty for a user metric.
  std::string config;
  /// Accuracy() and BinaryAccuracy() without a threshold: the metric as a
  /// binary one deciding at `threshold`. compile() calls it with a binary
  /// loss's binary_threshold (0 for logits, 0.5 for probabilities; see
  /// losses.h). Empty for the rest.
  std::function<Metric(double threshold)> at_threshold;

  /// The mean over all samples (and elements) of `per_sample(y_pred, y_true)`.
  static Metric mean_of(std::string name, std::function<torch::Tensor(const torch::Tensor&,
                                                                      const torch::Tensor&)>
                                              per_sample);
};

/// Picks sparse, categorical or binary accuracy from the shapes (binary for
/// one value per sample, at 0.5); compiled with a binary loss it is binary
/// accuracy at that loss's threshold (0 after BinaryCrossentropy's logits, the
/// default, or Python's BCEWithLogitsLoss), as Keras picks binary_accuracy.
Metric Accuracy();
Metric SparseCategoricalAccuracy();
Metric CategoricalAccuracy();
/// Prediction > threshold counts as 1. Without one, the compiled loss's:
/// 0 after a logits loss (BinaryCrossentropy(), the default; Python's
/// BCEWithLogitsLoss), 0.5 after probabilities or a loss that does not say.
Metric BinaryAccuracy(std::optional<double> threshold = std::nullopt);
/// The target is among the k highest scores; sparse or one-hot targets.
Metric TopKCategoricalAccuracy(int k = 5);
Metric MeanSquaredError();
Metric MeanAbsoluteError();

/// Rebuilds a built-in metric from its description (Metric::config,
/// parsed); a field left out takes the factory's default. An unknown class
/// name is a tnt::Error naming it and the registered ones.
/// Example: auto m = tnt::metrics::from_config(nlohmann::json::parse(Accuracy().config));
Metric from_config(const nlohmann::json& description);
/// The metric a name stands for, with its defaults, as Keras's metrics.get:
/// a class name or Keras's name ("accuracy"). An unknown name is a
/// tnt::ArgumentError naming it and every known name.
/// Example: auto m = tnt::metrics::get("accuracy");
Metric get(const std::string& name);

}  // namespace tnt::metrics
