// Private: the sharded optimizer (ZeRO stage 1) behind
// CompileOptions().shard_optimizer(true).
//
// The gradient buckets are reduce-scattered (GradientSynchronizer with
// SyncOptions().shard(true)), so rank r holds the summed gradient of its
// slice of every bucket: the reduce-scatter rule, the first D mod N ranks
// get D/N + 1 elements, the others D/N. This class gives the optimizer
// exactly those slices to update:
//   - every parameter's part inside this rank's slices becomes a "piece", a
//     flat tensor with the parameter's values, put into the optimizer's
//     parameter group of that parameter instead of the parameter itself;
//   - the optimizer's state is sliced the same way, so each rank holds 1/N;
//   - after the step, the pieces are allgathered back into every rank's
//     parameters.
// The built-in optimizers update element by element, so stepping pieces is
// the same arithmetic as stepping whole parameters.
//
// Checkpoints hold the whole ("full") state, as an unsharded optimizer on
// the parameters would: full_state_bytes() gathers it, and unshard() puts the
// optimizer back in that form (before a load, or a new bucket plan).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <torch/types.h>

#include <tarantella/comm/process_group.h>
#include <tarantella/dp/bucket_plan.h>

namespace torch::optim {
class Optimizer;
}

namespace tnt::dp {

/// Rank `rank`'s part of `numel` elements split over `size` ranks by the
/// reduce-scatter rule: [offset, offset + length).
struct ShardRange {
  std::int64_t offset = 0;
  std::int64_t length = 0;
};
ShardRange shard_range(std::int64_t numel, int rank, int size);

/// What is wrong with sharding `optimizer` (empty if nothing): an
/// optimizer whose update is not element-wise, or an unknown one.
std::string shard_problem(const torch::optim::Optimizer& optimizer);

/// Bytes of the tensors in `optimizer`'s state (this rank's).
std::int64_t optimizer_state_bytes(const torch::optim::Optimizer& optimizer);

class OptimizerShards {
 public:
  /// Takes over `optimizer`, built on `params` (in full form, its state, if
  /// any, the same on every rank): its groups get this rank's pieces of
  /// `buckets` (the synchronizer's plan over `params`), its state is sliced.
  /// Not collective.
  OptimizerShards(comm::ProcessGroup group, std::vector<torch::Tensor> params,
                  const std::vector<Bucket>& buckets, torch::optim::Optimizer& optimizer);
  /// Leaves the optimizer as it is (sharded) unless unshard() was called:
  /// call unshard() first to keep using it.
  ~OptimizerShards();
  OptimizerShards(const OptimizerShards&) = delete;
  OptimizerShards& operator=(const OptimizerShards&) = delete;

  const comm::ProcessGroup& group() const { return group_; }
  /// The pieces the optimizer steps (each with its gradient after
  /// set_gradients()).
  const std::vector<torch::Tensor>& pieces() const { return pieces_; }
  /// `slices[b]` is this rank's reduced slice of bucket b (its ShardRange):
  /// the pieces' gradients become views of it.
  void set_gradients(const std::vector<torch::Tensor>& slices);
  /// After the optimizer step: every rank's parameters get every rank's
  /// updated pieces (one allgatherv per bucket). Collective.
  void gather_parameters();
  /// The optimizer's state serialized in full form (as torch::optim's save
  /// writes it for an unsharded optimizer on the parameters), on every
  /// rank. Collective.
  std::string full_state_bytes();
  /// Puts the optimizer back in full form on every rank: groups on the
  /// parameters, the whole state. Collective. The object is spent after.
  void unshard();

 private:
  struct FullState;
  /// The whole state per parameter, gathered (collective).
  FullState gather_state();

  comm::ProcessGroup group_;
  std::vector<torch::Tensor> params_;
  std::vector<Bucket> buckets_;
  torch::optim::Optimizer* optimizer_;
  int kind_ = -1;                                  // index into the state kinds
  std::vector<std::vector<torch::Tensor>> group_params_;  // full form, per group
  std::vector<ShardRange> ranges_;                 // this rank's, per bucket
  std::vector<torch::Tensor> owned_;               // per bucket: the slice's values
  std::vector<torch::Tensor> pieces_;
  struct Piece {
    std::size_t param, bucket;
    std::int64_t param_offset;  // where the piece starts in the parameter (flat)
    std::int64_t slice_offset;  // ... and in the bucket's slice
    std::int64_t length;
  };
  std::vector<Piece> piece_info_;
  bool released_ = false;
};

}  // namespace tnt::dp
