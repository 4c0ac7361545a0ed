// The C++ half of a Python layer that communicates in forward and backward
// (tnt.nn.SyncBatchNorm, python/tarantella/nn.py).
//
// A Python layer cannot be a tnt::nn::CollectiveModule, but the engine
// finds collective layers through ModuleAdapter::modules() and
// dynamic_cast (train::EngineState::bind_collective_layers): it gives each one
// the model's group unless it was given one, and runs forward (and
// backward) on an empty micro-batch, so that a rank without samples still
// joins the layers' collectives. So each such Python layer holds a
// CollectiveLayer, a C++ CollectiveModule, in its attribute
// `_tnt_collective`; PyModule::modules() hands the engine those objects.
// The arithmetic is the C++ SyncBatchNorm's (tnt::nn::sync_batch_norm, a
// C++ autograd function): one implementation for both front ends.
#pragma once

#include <tarantella/keras/sync_batchnorm.h>
#include <torch/nn/module.h>

#include <memory>
#include <optional>
#include <vector>

#include "python/bindings.h"

namespace tnt::python {

/// The group-holding, computing core of a Python collective layer.
class CollectiveLayer final : public torch::nn::Module, public nn::CollectiveModule {
 public:
  /// `group`: kept (a tnt.Model does not replace it); empty: the model's
  /// group once a tnt.Model binds the layer, else the world group.
  explicit CollectiveLayer(comm::ProcessGroup group = comm::ProcessGroup());

  /// Whether the group was given (by the constructor or set_group).
  bool group_given() const { return given_; }
  void set_group(comm::ProcessGroup group);

  /// tnt::nn::sync_batch_norm over this layer's group, after the input
  /// checks of tnt::nn::SyncBatchNorm; releases the GIL.
  torch::Tensor sync_batch_norm(const torch::Tensor& input, std::int64_t num_features,
                                const std::optional<torch::Tensor>& weight,
                                const std::optional<torch::Tensor>& bias,
                                const std::optional<torch::Tensor>& running_mean,
                                const std::optional<torch::Tensor>& running_var, bool training,
                                double momentum, double eps) const;

 private:
  bool given_ = false;
};

/// The CollectiveLayer of every layer in the tree of `module` (a
/// torch.nn.Module), in module order. Needs the GIL.
std::vector<std::shared_ptr<torch::nn::Module>> collective_layers_of(const py::object& module);

}  // namespace tnt::python
