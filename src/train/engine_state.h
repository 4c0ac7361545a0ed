// Private: the training engine's state and the operations the loops need
// of it (train/fit_loop.cpp, train/evaluate_loop.cpp). It owns the parts
// (the network, the optimizer, the gradient exchange, the metrics
// accumulator, the counters, the timeline) and makes the StepContext that
// a training step works on (train/step_context.h). The front ends and
// persistence see the narrow train::Engine (train/engine.h), which owns one
// of these; only the loops, the engine itself and the tests include this
// header.
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

#include "train/engine.h"
#include "train/gradient_exchange.h"
#include "train/metrics_accumulator.h"
#include "train/mixed_precision.h"
#include "train/step_context.h"  // declares torch::optim::Optimizer and tnt::Timeline
#include "train/step_model.h"

namespace tnt::train {

class CallbackList;

class EngineState {
 public:
  /// Moves `net` to the device (a GPU when LibTorch has one, unless
  /// options.use_gpu() is false). `group` must contain this rank.
  EngineState(std::shared_ptr<ModuleAdapter> net, comm::ProcessGroup group,
              EngineOptions options);
  ~EngineState();
  EngineState(const EngineState&) = delete;
  EngineState& operator=(const EngineState&) = delete;

  /// Checks `options`, makes the optimizer over the trainable parameters
  /// and resets the optimizer's counters (not the epochs done).
  void compile(CompileOptions options);
  bool is_compiled() const { return compiled_.has_value(); }
  void require_compiled(const char* caller) const;

  /// The loops (collective over group()).
  callbacks::History fit(const data::Dataset& train, const FitOptions& options, Driver driver);
  Logs evaluate(const data::Dataset& dataset, const EvaluateOptions& options, Driver driver);
  /// fit()'s validation: evaluate() reporting to the fit's callbacks (their
  /// on_test_* hooks run, as in Keras) instead of a list of its own.
  Logs validate(const data::Dataset& dataset, const EvaluateOptions& options,
                CallbackList& fit_callbacks);
  torch::Tensor predict(const data::Dataset& dataset, const PredictOptions& options,
                        Driver driver);

  /// The network's output, always (predict, Model::forward); inputs on device.
  torch::Tensor run(const std::vector<torch::Tensor>& inputs);
  /// Structure check, then the master's weights, buffers and optimizer
  /// state on every rank. Collective.
  void synchronize_state();
  /// Gives the group to collective layers not given one (SyncBatchNorm) and
  /// records whether there are any (a converter may add them after
  /// construction: called again by compile()).
  void bind_collective_layers();

  const comm::ProcessGroup& group() const { return group_; }
  const EngineOptions& options() const { return options_; }
  ModuleAdapter& net() const { return *net_; }
  torch::Device device() const { return device_; }
  const CompileOptions& compiled() const;
  torch::optim::Optimizer& optimizer() const;
  Counters& counters() { return counters_; }
  const Counters& counters() const { return counters_; }
  /// Dynamic loss scaling, or null.
  const std::shared_ptr<LossScaler>& scaler() const { return scaler_; }
  /// fit()'s position (TrainingHost::position()); a state given to
  /// set_position as a device tensor is read on the host here, when asked
  /// (a backup), not at every step.
  const TrainingPosition& position() const;
  /// Where the next fit() starts (TrainingHost::resume_from()).
  void resume_from(const TrainingPosition& position) { resume_ = position; }
  /// Learning rate of the optimizer's first group / of every group.
  double learning_rate() const;
  void set_learning_rate(double rate);

  /// Used by the loops (train/fit_loop.cpp, train/evaluate_loop.cpp).
  std::vector<torch::Tensor> inputs_of(const data::Element& e) const;
  torch::Tensor target_of(const data::Element& e) const;
  /// The loss and metrics' state vector (after compile()).
  const MetricsAccumulator& metrics() const;
  /// The output of a training or evaluation micro-batch: undefined for an
  /// empty one unless the network has collective layers (every rank must
  /// join their collectives).
  torch::Tensor forward(const std::vector<torch::Tensor>& inputs);
  bool collective_layers() const { return collective_layers_; }
  /// What the step needs of the model (forward, target, loss, state), as
  /// functions over this engine.
  StepModel step_model();
  /// What a training step works on (after compile()). Collective the
  /// first time with a timeline (it opens it).
  StepContext step_context();
  /// The gradient exchange (synchroniser, shards, auto-tuner).
  GradientExchange& gradients() { return gradients_; }
  /// The network's buffers (BatchNorm's running statistics).
  std::vector<torch::Tensor> buffers() const;
  Timeline* timeline();
  void set_position(TrainingPosition position, torch::Tensor state = {}) {
    position_ = std::move(position);
    position_state_ = std::move(state);
  }
  std::optional<TrainingPosition> take_resume();

 private:
  // evaluate() and validate(): make_callbacks(steps) gives the callback list.
  template <typename MakeCallbacks>
  Logs evaluate_with(const data::Dataset& dataset, const EvaluateOptions& options,
                     MakeCallbacks make_callbacks);

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
  Counters counters_;
  std::shared_ptr<LossScaler> scaler_;
  std::unique_ptr<Timeline> timeline_;
  mutable TrainingPosition position_;
  mutable torch::Tensor position_state_;  // position_.state, not yet read from the device
  std::optional<TrainingPosition> resume_;
  bool collective_layers_ = false;
};

/// Sums a float64 state vector over the group's ranks (blocking).
std::vector<double> allreduce_state(const comm::ProcessGroup& group,
                                    const std::vector<double>& local);

}  // namespace tnt::train
