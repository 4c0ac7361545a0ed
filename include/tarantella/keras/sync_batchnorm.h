// Synchronized batch normalization: BatchNorm whose mean and variance are
// those of the GLOBAL batch, not of each rank's micro-batch.
//
//   tnt::nn::SyncBatchNorm          a drop-in for torch::nn::BatchNorm{1,2,3}d
//                                   (same options, members and parameter
//                                   names, so state dicts load either way)
//   tnt::nn::convert_sync_batchnorm replaces the BatchNorm layers of a model
//                                   built from containers (see its comment)
//   tnt::layers::SyncBatchNorm      the layer-registry twin (layers.h)
//
// How it works. In training, every rank computes per channel the count,
// sum and sum of squares of its micro-batch (from a numerically stable local
// mean and variance) and the ranks allreduce them: ONE allreduce of 2C+1
// float64 values gives the global mean and (biased) variance, with which
// each rank normalizes its own samples. Backward needs two global sums per
// channel, of dy and of dy * (x - mean): ONE more allreduce of 2C values.
// The gradients of weight and bias stay local; the gradient engine sums them
// with the others. Running statistics are updated with the global mean and
// the unbiased global variance, as torch::nn::BatchNorm does with its batch.
// In evaluation (eval()) the running statistics are used: no communication.
//
// Note: gradient weighting. Tarantella weights rank r's gradients by n_r / B
// (its samples over the global batch) because each rank's loss is the mean
// over its own samples. The global sums of backward must combine gradients
// of the same objective, so rank r adds n_r * dy and divides what comes back
// by n_r: with uneven micro-batches the result is the serial gradient, and a
// rank with no samples (n_r = 0) adds zeros. With even micro-batches this is
// PyTorch's SyncBatchNorm. A loop that weights ranks otherwise (a summed
// loss, say) does not get serial gradients from this layer.
//
// Every rank of the group must run forward (and backward) of every
// SyncBatchNorm in training, also with an empty micro-batch: tnt::Model::fit
// does so. A one-rank group, or no group and no tnt::Runtime, is plain
// BatchNorm (LibTorch's kernel, nothing sent).
#pragma once

#include <cstdint>
#include <iosfwd>
#include <optional>

#include <torch/nn/cloneable.h>
#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

#include <tarantella/base/arg.h>
#include <tarantella/comm/process_group.h>

namespace tnt::nn {

/// A module whose training forward and backward are collective over a
/// process group. tnt::Model gives its own group to every such module of its
/// network that was not given one (at construction and at compile), so a
/// model on a process set communicates on that set. Without a group and
/// outside a tnt::Model the world group of the running runtime is used.
class CollectiveModule {
 public:
  virtual ~CollectiveModule() = default;
  /// The group given or set by a tnt::Model, or an empty handle.
  const comm::ProcessGroup& process_group() const { return group_; }
  /// Communicate over `group` (e.g. a subgroup, to normalize over the ranks
  /// of one node only); a tnt::Model keeps it. An empty handle undoes it.
  void set_process_group(comm::ProcessGroup group) {
    group_ = std::move(group);
    given_ = group_.valid();
  }
  /// What tnt::Model calls: its group, unless one was given.
  void use_model_group(const comm::ProcessGroup& group) {
    if (!given_) group_ = group;
  }

 protected:
  CollectiveModule() = default;
  explicit CollectiveModule(comm::ProcessGroup group)
      : group_(std::move(group)), given_(group_.valid()) {}

 private:
  comm::ProcessGroup group_;
  bool given_ = false;
};

/// Options of SyncBatchNorm, as torch::nn::BatchNormOptions (PyTorch's
/// momentum convention: running = (1 - momentum) * running + momentum *
/// batch; no momentum = a cumulative average).
///
/// Example: tnt::nn::SyncBatchNorm bn(tnt::nn::SyncBatchNormOptions(64).momentum(0.01));
struct SyncBatchNormOptions {
  /* implicit */ SyncBatchNormOptions(std::int64_t num_features) : num_features_(num_features) {}
  TNT_ARG(std::int64_t, num_features);
  TNT_ARG(double, eps) = 1e-5;
  TNT_ARG(std::optional<double>, momentum) = 0.1;
  TNT_ARG(bool, affine) = true;
  TNT_ARG(bool, track_running_stats) = true;
};

/// Batch normalization over channel dimension 1 of [N, C] or [N, C, ...]
/// inputs with the statistics of the global batch (the micro-batches of all
/// ranks of the group).
///
/// Example (in your module, instead of torch::nn::BatchNorm2d):
///   tnt::nn::SyncBatchNorm bn1_{nullptr};                       // the member
///   bn1_ = register_module("bn1", tnt::nn::SyncBatchNorm(64));  // in the constructor
///   x = torch::relu(bn1_(conv1_(x)));                           // in forward
class SyncBatchNormImpl : public torch::nn::Cloneable<SyncBatchNormImpl>, public CollectiveModule {
 public:
  /// `group`: the ranks whose micro-batches form the batch; empty: the
  /// tnt::Model's group, else the world group.
  explicit SyncBatchNormImpl(const SyncBatchNormOptions& options,
                             comm::ProcessGroup group = comm::ProcessGroup());
  void reset() override;
  /// running_mean 0, running_var 1, num_batches_tracked 0.
  void reset_running_stats();
  /// reset_running_stats(), weight 1, bias 0.
  void reset_parameters();
  torch::Tensor forward(const torch::Tensor& input);
  void pretty_print(std::ostream& stream) const override;

  SyncBatchNormOptions options;
  torch::Tensor weight;               ///< undefined unless affine
  torch::Tensor bias;                 ///< undefined unless affine
  torch::Tensor running_mean;         ///< undefined unless track_running_stats
  torch::Tensor running_var;          ///< undefined unless track_running_stats
  torch::Tensor num_batches_tracked;  ///< undefined unless track_running_stats
};
TORCH_MODULE(SyncBatchNorm);

/// The functional form. In training, normalizes with the global statistics
/// over `group` (empty: the world group of the running runtime, or this
/// process alone without one) and updates `running_mean` / `running_var` in
/// place when they are defined; `momentum` is PyTorch's (the weight of the
/// new batch). In evaluation, the running statistics normalize.
torch::Tensor sync_batch_norm(const torch::Tensor& input, const torch::Tensor& weight,
                              const torch::Tensor& bias, const torch::Tensor& running_mean,
                              const torch::Tensor& running_var, bool training, double momentum,
                              double eps, const comm::ProcessGroup& group);

/// Replaces every torch::nn::BatchNorm1d/2d/3d (and every registry
/// tnt::layers::BatchNorm) in `module`'s tree by its synchronized equivalent
/// over `group` (empty: the tnt::Model's group, else the world group),
/// copying options, weights and running statistics. Returns how many it
/// replaced. Call it before tnt::Model::compile: the optimizer takes the
/// parameters that exist then.
///
/// What it can replace. C++ has no attribute lookup: a module that keeps its
/// BatchNorm in a member (`torch::nn::BatchNorm2d bn1_;` called as
/// `bn1_(x)`) keeps calling the old object whatever the converter does with
/// the registered child. The converter therefore replaces BatchNorm layers
/// only where the module tree itself decides what forward() calls: inside
/// torch::nn::Sequential, ModuleList and ModuleDict and
/// tnt::layers::Sequential, at any depth (also inside your modules, when
/// they hold such a container). A BatchNorm registered directly in a module
/// of yours is an Error naming it, before anything is changed: declare that
/// member as tnt::nn::SyncBatchNorm instead (same options and names).
///
/// Example:
///   torch::nn::Sequential net(torch::nn::Conv2d(3, 16, 3), torch::nn::BatchNorm2d(16),
///                             torch::nn::ReLU());
///   tnt::nn::convert_sync_batchnorm(*net);   // 1
///   tnt::Model model(net);
std::size_t convert_sync_batchnorm(torch::nn::Module& module,
                                   comm::ProcessGroup group = comm::ProcessGroup());

}  // namespace tnt::nn
