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
// the parameters would: with_full_form() gathers it, and unshard() puts the
// optimizer back in that form (before a load, or a new bucket plan).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
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

struct StateKind;

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

class OptimizerShards {
 public:
  /// Takes over `optimizer`, built on `params` (in full form, its state, if
  /// any, the same on every rank): its groups get this rank's pieces of
  /// `buckets` (the synchronizer's plan over `params`), its state is sliced.
  /// Not collective.
  /// `on_gathered(b, bucket)`, if given, receives each gathered bucket of
  /// parameters once it is copied out (a bucket-sized tensor free for
  /// reuse: GradientSynchronizer::adopt_buffer).
  OptimizerShards(comm::ProcessGroup group, std::vector<torch::Tensor> params,
                  const std::vector<Bucket>& buckets, torch::optim::Optimizer& optimizer,
                  std::function<void(std::size_t, torch::Tensor)> on_gathered = nullptr);
  /// Leaves the optimizer as it is (sharded) unless unshard() was called:
  /// call unshard() first to keep using it.
  ~OptimizerShards();
  OptimizerShards(const OptimizerShards&) = delete;
  OptimizerShards& operator=(const OptimizerShards&) = delete;

  const comm::ProcessGroup& group() const { return group_; }
  /// The pieces the optimizer steps: views of the parameters' memory (the
  /// step writes into this rank's part of them directly).
  const std::vector<torch::Tensor>& pieces() const { return pieces_; }
  /// Bucket b's reduced slice (its ShardRange of the bucket) becomes the
  /// gradient of the bucket's pieces. The slice is kept: start_gather(b)
  /// sends the updated values from it.
  void set_gradient(std::size_t b, const torch::Tensor& slice);
  /// The optimizer steps bucket b's pieces only (the same arithmetic as a
  /// whole step: the updates are element-wise).
  void step_bucket(std::size_t b);
  /// Sends bucket b's updated slice to every rank (asynchronous).
  void start_gather(std::size_t b);
  /// Waits for the gathers started and writes every rank's parameters.
  void finish_gather();
  /// set_gradient for every bucket.
  void set_gradients(const std::vector<torch::Tensor>& slices);
  /// start_gather for every bucket, then finish_gather. Collective.
  void gather_parameters();
  /// Calls `use` with the optimizer in full form (groups on the parameters,
  /// the whole state, in host memory: GPU memory holds the shards only),
  /// then puts the shards back: on every rank. Collective. A checkpoint
  /// saves the optimizer in this form.
  void with_full_form(const std::function<void(const torch::optim::Optimizer&)>& use);
  /// Puts the optimizer back in full form on every rank: groups on the
  /// parameters, the whole state. Collective. The object is spent after.
  void unshard();

 private:
  struct FullState;
  /// The whole state per parameter, gathered (collective), on `into` (else
  /// where the parameters are).
  FullState gather_state(const std::optional<torch::Device>& into);

  comm::ProcessGroup group_;
  std::vector<torch::Tensor> params_;
  std::vector<Bucket> buckets_;
  torch::optim::Optimizer* optimizer_;
  const StateKind* kind_ = nullptr;                // how to read its state
  std::vector<std::vector<torch::Tensor>> group_params_;  // full form, per group
  std::vector<ShardRange> ranges_;                 // this rank's, per bucket
  std::vector<torch::Tensor> slices_;              // per bucket: the last reduced slice
  std::vector<comm::Handle> gathers_;              // per bucket: started, not yet written
  std::vector<torch::Tensor> pieces_;
  // Per bucket, per optimizer group: the bucket's pieces (step_bucket).
  std::vector<std::vector<std::vector<torch::Tensor>>> bucket_pieces_;
  struct Piece {
    std::size_t param, bucket;
    std::int64_t param_offset;  // where the piece starts in the parameter (flat)
    std::int64_t slice_offset;  // ... and in the bucket's slice
    std::int64_t length;
  };
  std::vector<Piece> piece_info_;
  std::function<void(std::size_t, torch::Tensor)> on_gathered_;
  bool released_ = false;
};

}  // namespace tnt::dp
