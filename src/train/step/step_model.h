// Private: what a training step needs of the model (StepModel) and what
// happens after the gradients are summed (StepRules), as plain values, so
// that the engine can hand them out without the step's machinery.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>

#include <torch/types.h>

#include <tarantella/data/element.h>
#include <tarantella/keras/layer_output.h>

#include "train/step/mixed_precision.h"

namespace tnt::comm {
class ProcessGroup;
}

namespace tnt::train {

/// What a step needs of the model.
struct StepModel {
  /// The network's output for a micro-batch's element (inputs on device).
  /// For an empty micro-batch it may return an undefined tensor: the step
  /// then skips forward and backward. A defined output is backpropagated
  /// (with zero gradients), for models whose layers communicate
  /// (SyncBatchNorm), which every rank must run.
  std::function<torch::Tensor(const data::Element&)> forward;
  /// forward, layer by layer where the network is a chain of layers, each
  /// layer's output kept (ModuleAdapter::forward_by_layer; `kept` left
  /// empty where it is not a chain).
  std::function<torch::Tensor(const data::Element&, std::vector<LayerOutput>& kept)>
      forward_by_layer;
  /// The target of a micro-batch's element (on device).
  std::function<torch::Tensor(const data::Element&)> target;
  /// The mean loss of a batch.
  std::function<torch::Tensor(const torch::Tensor&, const torch::Tensor&)> loss;
  /// The float64 loss/metric state increment of a batch:
  /// (output, target, mean loss, samples).
  std::function<torch::Tensor(const torch::Tensor&, const torch::Tensor&, const torch::Tensor&,
                              std::int64_t)>
      state;
};

/// What happens after the gradients are summed (Keras's clipnorm/clipvalue,
/// a learning rate per optimizer step).
struct StepRules {
  std::optional<double> clip_norm;
  std::optional<double> clip_value;
  std::function<double(std::int64_t)> schedule;  ///< optimizer step -> rate, or empty
  /// Dynamic loss scaling (mixed precision), or null.
  std::shared_ptr<LossScaler> scaler;
  /// With pipeline stages: this rank's pipeline (one rank of each stage),
  /// over which clip_norm's norm and loss scaling's overflow check cover
  /// the whole model; null without.
  const comm::ProcessGroup* stages = nullptr;
  /// Whether the update needs every gradient before it starts (clipping,
  /// loss scaling), so it cannot run bucket by bucket.
  bool needs_all_gradients() const { return scaler || clip_norm || clip_value; }
};

using Clock = std::chrono::steady_clock;

}  // namespace tnt::train
