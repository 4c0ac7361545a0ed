// tnt::Model: wrap any LibTorch network and train it data-parallel with a
// Keras-style API. fit() splits every global batch into per-rank
// micro-batches (data/distribute.h), synchronizes gradients with fused,
// overlapped allreduces (dp/gradient_sync.h) weighted by each rank's share
// of the batch, and aggregates loss and metrics exactly. evaluate() and
// predict() are distributed the same way. The model knows nothing of MPI.
#pragma once

#include <iosfwd>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>
#include <torch/nn/modules/container/sequential.h>

#include <tarantella/train/callback.h>
#include <tarantella/comm/process_group.h>
#include <tarantella/keras/module_adapter.h>
#include <tarantella/model/pipeline.h>
#include <tarantella/train/options.h>

namespace tnt {

struct ModelInternals;

/// A network trained data-parallel across the ranks of a process group: the
/// world group by default, or a process set (two models can train at the
/// same time on disjoint groups). Rank 0 of the group is its master: it
/// logs, prints progress and writes files.
///
/// Example:
///   tnt::Model model{LeNet5()};   // braces: `model(LeNet5())` would declare a function
///   tnt::Model on_pair{LeNet5(), tnt::world().subgroup({0, 1})};   // ranks 0 and 1 only
///   model.compile(...);
///   auto history = model.fit(train, tnt::FitOptions().epochs(5));
///   auto results = model.evaluate(test);   // {"loss": ..., "sparse_categorical_accuracy": ...}
class Model {
 public:
  template <typename M, typename = decltype(make_adapter(std::declval<M>()))>
  explicit Model(M module) : Model(make_adapter(std::move(module))) {}
  /// A model trained on the ranks of `group` only; every collective of the
  /// model (fit, evaluate, predict, save, load) involves just those ranks.
  /// A rank outside the group cannot build it (a tnt::Error says so).
  template <typename M, typename = decltype(make_adapter(std::declval<M>()))>
  Model(M module, comm::ProcessGroup group)
      : Model(make_adapter(std::move(module)), std::move(group)) {}
  explicit Model(std::shared_ptr<ModuleAdapter> adapter);
  Model(std::shared_ptr<ModuleAdapter> adapter, comm::ProcessGroup group);
  /// A Sequential cut into pipeline stages over the ranks (pipeline.h):
  /// N ranks run N / P replicas of a P-stage pipeline. Each rank keeps its
  /// stage's layers; the other stages' parameters and buffers in `net` are
  /// freed. Collective over the group.
  ///
  /// Example:
  ///   tnt::Model model(net, tnt::PipelineOptions().stages(2).micro_batches(8));
  Model(torch::nn::Sequential net, PipelineOptions pipeline);
  Model(torch::nn::Sequential net, PipelineOptions pipeline, comm::ProcessGroup group);
  ~Model();
  Model(Model&&) noexcept;
  Model& operator=(Model&&) noexcept;

  void compile(CompileOptions options);
  bool is_compiled() const;
  callbacks::History fit(const data::Dataset& train, FitOptions options = FitOptions());
  /// Global loss and metrics over the whole dataset: {"loss": ..., name: ...}.
  std::map<std::string, double> evaluate(const data::Dataset& dataset,
                                         EvaluateOptions options = EvaluateOptions());
  /// The outputs for every sample, in dataset order, on the master rank (an
  /// undefined tensor elsewhere unless on_all_ranks).
  torch::Tensor predict(const data::Dataset& dataset, PredictOptions options = PredictOptions());
  /// Prints layers, parameter shapes and counts (master rank only).
  void summary(std::ostream& out) const;
  void summary() const;

  /// Runs the network on one batch of inputs on this rank (no communication;
  /// but SyncBatchNorm layers in training mode make it collective).
  torch::Tensor forward(const std::vector<torch::Tensor>& inputs);

  NamedTensorList named_parameters() const;
  NamedTensorList named_buffers() const;
  /// Weights and buffers, in named_parameters() then named_buffers() order:
  /// copies on the model's device (Python's get_weights() returns them on
  /// the CPU).
  std::vector<torch::Tensor> get_weights() const;
  /// Copies `weights` in, then broadcasts the master's to every rank.
  void set_weights(const std::vector<torch::Tensor>& weights);
  /// Writes parameters and buffers as a dict of tensors in the format of
  /// Python's torch.save (readable by torch.load). Master rank only unless
  /// `all_ranks`; written to a temporary name, then renamed. Collective.
  void save_weights(const std::string& path, bool all_ranks = false) const;
  /// Reads a file written by save_weights or by Python's torch.save of a
  /// dict / state_dict, then broadcasts the master's weights. Collective.
  void load_weights(const std::string& path);

  /// Writes a checkpoint of the whole training state: weights, buffers,
  /// optimizer state, completed epochs, optimizer steps (for schedules) and
  /// the random generator's state — one file in torch.save format (a dict).
  /// Collective; the master writes (every rank with `all_ranks`), to a
  /// temporary name renamed into place.
  void save(const std::string& path, bool all_ranks = false) const;
  /// Restores a checkpoint written by save() into this model (compile it
  /// first: the optimizer state needs the optimizer) and broadcasts it;
  /// returns the completed epochs, to pass as FitOptions().initial_epoch().
  /// Collective; errors name the file and what is wrong, on every rank.
  std::int64_t load(const std::string& path);
  /// Epochs completed by fit() (or restored by load()).
  std::int64_t epochs_done() const;
  /// The current loss scale with dynamic loss scaling (mixed precision), 1
  /// without; and the optimizer steps skipped because gradients overflowed.
  double loss_scale() const;
  std::int64_t skipped_steps() const;

  /// The architecture (Keras's get_config) of a model built from the layer
  /// registry (tnt::layers::Sequential or a module with config_json());
  /// an Error saying so for other networks. See tnt::models for the reverse.
  nlohmann::json get_config() const;
  /// get_config() as JSON text (2-space indented).
  std::string to_json() const;
  /// The compile configuration (optimizer, loss, metrics, schedule and the
  /// engine settings) as JSON, with null for user-defined parts; null if the
  /// model is not compiled. Model::save stores it.
  nlohmann::json get_compile_config() const;

  torch::optim::Optimizer& optimizer();
  torch::Device device() const;
  /// The ranks this model trains on (with pipeline stages: every stage of
  /// every replica, in a group of the model's own over the same ranks).
  const comm::ProcessGroup& group() const;
  /// This rank's stage and replica in a pipelined model (pipeline.h);
  /// nullopt without stages (PipelineOptions().stages(1), or any other
  /// constructor). Python's tnt.Model.pipeline is the same.
  std::optional<PipelinePosition> pipeline() const;
  /// Set by a callback to end fit() after the current epoch, on every rank.
  bool stop_training = false;

  struct Impl;

 private:
  friend struct ModelInternals;  // the library's own access (model_impl.h)
  std::unique_ptr<Impl> impl_;
};

}  // namespace tnt
