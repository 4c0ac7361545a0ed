// Private: the training engine's state. It owns the parts (the network,
// the optimizer, the gradient exchange, the metrics accumulator, the
// counters, the position, the timeline), compiles them, and hands out the
// contexts that the loops and steps work on (train/loop/loop_context.h,
// train/step/step_context.h); it runs no loop itself. The front ends and
// persistence see the narrow train::Engine (train/engine/engine.h), which owns one
// of these and drives the loops over its contexts; only the engine and the
// tests include this header.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <torch/types.h>

#include <tarantella/comm/process_group.h>
#include <tarantella/data/element.h>
#include <tarantella/dp/gradient_sync.h>
#include <tarantella/keras/module_adapter.h>
#include <tarantella/train/callback.h>
#include <tarantella/train/engine_options.h>
#include <tarantella/train/options.h>
#include <tarantella/train/training_host.h>

#include "stages/groups.h"
#include "train/step/counters.h"
#include "train/step/gradient_exchange.h"
#include "train/loop/loop_context.h"
#include "train/step/metrics_accumulator.h"
#include "train/step/mixed_precision.h"
#include "train/loop/position_keeper.h"
#include "train/step/step_context.h"  // declares torch::optim::Optimizer and tnt::Timeline
#include "train/step/stage_link.h"
#include "train/step/step_model.h"

namespace tnt::train {

class EngineState {
 public:
  /// Moves `net` to the device (a GPU when LibTorch has one, unless
  /// options.use_gpu() is false). `group` must contain this rank.
  EngineState(std::shared_ptr<ModuleAdapter> net, comm::ProcessGroup group,
              EngineOptions options, std::optional<stages::StageGroups> stages = std::nullopt);
  ~EngineState();
  EngineState(const EngineState&) = delete;
  EngineState& operator=(const EngineState&) = delete;

  /// Checks `options`, makes the optimizer over the trainable parameters
  /// and resets the optimizer's counters (not the epochs done).
  void compile(CompileOptions options);
  bool is_compiled() const { return compiled_.has_value(); }
  void require_compiled(const char* caller) const;

  /// What fit and evaluate work on (after compile(); `caller` names the
  /// loop in the error before it). Collective the first time with a
  /// timeline (it opens it).
  LoopContext loop_context(const char* caller);
  /// What predict works on, compiled or not.
  PredictContext predict_context();

  /// The network's output, always (predict, Model::forward); inputs on device.
  /// With `kept`: layer by layer where the network is a chain of layers
  /// (ModuleAdapter::forward_by_layer), their outputs in `kept` (left empty
  /// where it is not one).
  torch::Tensor run(const std::vector<torch::Tensor>& inputs,
                    std::vector<LayerOutput>* kept = nullptr);
  /// Structure check, then the master's weights, buffers and optimizer
  /// state on every rank. Collective.
  void synchronize_state();
  /// Gives the group to collective layers not given one (SyncBatchNorm) and
  /// records whether there are any (a converter may add them after
  /// construction: called again by compile()).
  void bind_collective_layers();

  /// The engine's collectives' group: with stages, this stage's replicas.
  const comm::ProcessGroup& group() const { return group_; }
  /// The model's group: with stages, every stage of every replica.
  const comm::ProcessGroup& everyone() const { return stages_ ? stages_->whole : group_; }
  /// With stages, where this rank sits; null without.
  const stages::StageLayout* stage_layout() const { return stages_ ? &stages_->layout : nullptr; }
  /// With stages, the links to the neighbour stages; null without.
  StageLink* stage_link() const { return link_.get(); }
  const EngineOptions& options() const { return options_; }
  ModuleAdapter& net() const { return *net_; }
  torch::Device device() const { return device_; }
  const CompileOptions& compiled() const;
  torch::optim::Optimizer& optimizer() const;
  Counters& counters() { return counters_; }
  const Counters& counters() const { return counters_; }
  /// Dynamic loss scaling, or null.
  const std::shared_ptr<LossScaler>& scaler() const { return scaler_; }
  /// fit()'s position and where the next fit() starts
  /// (TrainingHost::position(), resume_from()).
  PositionKeeper& position() { return position_; }
  const PositionKeeper& position() const { return position_; }
  /// Learning rate of the optimizer's first group / of every group.
  double learning_rate() const;
  void set_learning_rate(double rate);

  /// What a training step works on (after compile()). Collective the
  /// first time with a timeline (it opens it).
  StepContext step_context();
  /// The gradient exchange (synchroniser, shards, auto-tuner).
  GradientExchange& gradients() { return gradients_; }

 private:
  std::vector<torch::Tensor> inputs_of(const data::Element& e) const;
  torch::Tensor target_of(const data::Element& e) const;
  const MetricsAccumulator& metrics() const;
  /// The output of a training or evaluation micro-batch: undefined for an
  /// empty one unless the network has collective layers (every rank must
  /// join their collectives).
  torch::Tensor forward(const std::vector<torch::Tensor>& inputs,
                        std::vector<LayerOutput>* kept = nullptr);
  /// What the step needs of the model (forward, target, loss, state), as
  /// functions over this engine.
  StepModel step_model();
  Timeline* timeline();

  comm::ProcessGroup group_;
  EngineOptions options_;
  std::shared_ptr<ModuleAdapter> net_;
  torch::Device device_{torch::kCPU};
  std::optional<CompileOptions> compiled_;
  std::unique_ptr<torch::optim::Optimizer> optimizer_;
  std::optional<MetricsAccumulator> metrics_;
  /// Declared after the optimizer: destroyed first (its shards hold it).
  GradientExchange gradients_{group_, options_};
  std::vector<torch::Tensor> trainable_;
  std::vector<std::string> trainable_names_;  // the state_dict keys of trainable_
  Counters counters_;
  std::shared_ptr<LossScaler> scaler_;
  std::unique_ptr<Timeline> timeline_;
  PositionKeeper position_;
  bool collective_layers_ = false;
  std::optional<stages::StageGroups> stages_;
  std::shared_ptr<StageLink> link_;  // with stages
};

}  // namespace tnt::train
