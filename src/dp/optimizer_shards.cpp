// The sharded optimizer (ZeRO stage 1): see optimizer_shards.h.
#include "dp/optimizer_shards.h"

#include <algorithm>
#include <set>
#include <sstream>
#include <utility>

#include <torch/torch.h>

#include <tarantella/base/error.h>
#include <tarantella/base/torch_compat.h>

#include "dp/bucket_steps.h"
#include "dp/optimizer_state.h"

namespace tnt::dp {
namespace {

using StatePtr = std::unique_ptr<torch::optim::OptimizerParamState>;

// torch::optim keys its state by the parameter's TensorImpl address.
compat::OptimizerStateKey state_key(const torch::Tensor& t) { return compat::optimizer_state_key(t); }

// A flat tensor over `base`'s memory at `offset` that autograd does not see
// as a view (an optimizer may detach_() and zero_() its gradient).
torch::Tensor shard_alias(const torch::Tensor& base, std::int64_t offset, std::int64_t length) {
  torch::Tensor out = torch::empty({0}, base.options());
  out.set_(base.storage(), base.storage_offset() + offset, {length}, {1});
  return out;
}

}  // namespace

ShardRange shard_range(std::int64_t numel, int rank, int size) {
  const std::int64_t base = numel / size, extra = numel % size;
  ShardRange r;
  r.offset = rank * base + std::min<std::int64_t>(rank, extra);
  r.length = base + (rank < extra ? 1 : 0);
  return r;
}

std::string shard_problem(const torch::optim::Optimizer& optimizer) {
  if (updates_element_wise(optimizer)) return {};
  const std::string known = state_kind_names();
  if (dynamic_cast<const torch::optim::LBFGS*>(&optimizer) != nullptr) {
    return "shard_optimizer(true): LBFGS's update is not element-wise (line search over all "
           "parameters), so it cannot step a shard of them: use one of " +
           known + ", or compile without shard_optimizer";
  }
  return "shard_optimizer(true) supports the element-wise optimizers " + known +
         "; this optimizer is none of them: use one of those, or compile without "
         "shard_optimizer";
}

struct OptimizerShards::FullState {
  std::vector<StatePtr> per_param;  // null: no state (yet)
};

OptimizerShards::OptimizerShards(comm::ProcessGroup group, std::vector<torch::Tensor> params,
                                 const std::vector<Bucket>& buckets,
                                 torch::optim::Optimizer& optimizer,
                                 std::function<void(std::size_t, torch::Tensor)> on_gathered)
    : group_(std::move(group)),
      params_(std::move(params)),
      buckets_(buckets),
      optimizer_(&optimizer),
      kind_(state_kind(optimizer)),
      on_gathered_(std::move(on_gathered)) {
  TNT_CHECK(kind_ != nullptr, shard_problem(optimizer));
  const std::vector<int> group_of = groups_of(params_, optimizer, "shard_optimizer(true)");
  auto& groups = optimizer.param_groups();
  for (const auto& g : groups) group_params_.push_back(g.params());

  torch::NoGradGuard no_grad;
  std::vector<std::vector<torch::Tensor>> group_pieces(groups.size());
  auto& state = optimizer.state();
  for (std::size_t b = 0; b < buckets_.size(); ++b) {
    const Bucket& bucket = buckets_[b];
    const ShardRange range = shard_range(bucket.numel, group_.rank(), group_.size());
    ranges_.push_back(range);
    bucket_pieces_.emplace_back(groups.size());
    for (std::size_t k = 0; k < bucket.params.size(); ++k) {
      const std::size_t p = bucket.params[k];
      const std::int64_t begin = std::max(bucket.offsets[k], range.offset);
      const std::int64_t end =
          std::min(bucket.offsets[k] + params_[p].numel(), range.offset + range.length);
      if (begin >= end || group_of[p] < 0) continue;
      TNT_CHECK(params_[p].is_contiguous(), "shard_optimizer(true): parameter ", p,
                " is not contiguous in memory: call .contiguous() on it when the module is built");
      Piece piece{p, b, begin - bucket.offsets[k], begin - range.offset, end - begin};
      // A view of the parameter's own memory: the step updates it in place.
      torch::Tensor t = shard_alias(params_[p].detach(), piece.param_offset, piece.length);
      const auto full = state.find(state_key(params_[p]));
      if (full != state.end()) {
        std::vector<torch::Tensor> sliced;
        for (const auto& f : kind_->tensors(*full->second)) {
          sliced.push_back(f.defined()
                               ? f.reshape({-1}).narrow(0, piece.param_offset, piece.length).clone()
                               : torch::Tensor());
        }
        state[state_key(t)] = kind_->make(sliced, kind_->step(*full->second));
      }
      group_pieces[group_of[p]].push_back(t);
      bucket_pieces_[b][group_of[p]].push_back(t);
      pieces_.push_back(t);
      piece_info_.push_back(piece);
    }
  }
  slices_.resize(buckets_.size());
  gathers_.resize(buckets_.size());
  for (const auto& p : params_) state.erase(state_key(p));
  for (std::size_t g = 0; g < groups.size(); ++g) groups[g].params() = group_pieces[g];
}

OptimizerShards::~OptimizerShards() = default;

void OptimizerShards::set_gradient(std::size_t b, const torch::Tensor& slice) {
  TNT_CHECK(slice.numel() == ranges_.at(b).length, "OptimizerShards: bucket ", b, "'s slice has ",
            slice.numel(), " elements, this rank's share is ", ranges_[b].length);
  slices_[b] = slice;
  for (std::size_t i = 0; i < pieces_.size(); ++i) {
    const Piece& piece = piece_info_[i];
    if (piece.bucket != b) continue;
    pieces_[i].mutable_grad() = shard_alias(slice, piece.slice_offset, piece.length);
  }
}

void OptimizerShards::set_gradients(const std::vector<torch::Tensor>& slices) {
  TNT_CHECK(slices.size() == buckets_.size(), "OptimizerShards: ", slices.size(),
            " gradient slices for ", buckets_.size(), " buckets");
  for (std::size_t b = 0; b < slices.size(); ++b) set_gradient(b, slices[b]);
}

void OptimizerShards::step_bucket(std::size_t b) { step_subset(*optimizer_, bucket_pieces_.at(b)); }

void OptimizerShards::start_gather(std::size_t b) {
  // The slice held the gradient; it now carries the updated values (and
  // the pieces' gradients, views of it, are dropped).
  TNT_CHECK(slices_.at(b).defined(), "OptimizerShards: start_gather(", b, ") before set_gradient");
  torch::NoGradGuard no_grad;
  torch::Tensor send = slices_[b];
  for (std::size_t i = 0; i < pieces_.size(); ++i) {
    const Piece& piece = piece_info_[i];
    if (piece.bucket != b) continue;
    pieces_[i].mutable_grad().reset();
    send.narrow(0, piece.slice_offset, piece.length).copy_(pieces_[i]);
  }
  gathers_[b] = group_.allgatherv_async(send);
  slices_[b] = torch::Tensor();
}

void OptimizerShards::finish_gather() {
  torch::NoGradGuard no_grad;
  for (std::size_t b = 0; b < buckets_.size(); ++b) {
    if (!gathers_[b].valid()) continue;
    // The slices are consecutive in rank order: the result is the bucket.
    const torch::Tensor full = gathers_[b].wait();
    gathers_[b] = comm::Handle();
    const Bucket& bucket = buckets_[b];
    for (std::size_t k = 0; k < bucket.params.size(); ++k) {
      torch::Tensor p = params_[bucket.params[k]].detach();
      p.copy_(full.narrow(0, bucket.offsets[k], p.numel()).view(p.sizes()));
    }
    if (on_gathered_) on_gathered_(b, full);
  }
}

void OptimizerShards::gather_parameters() {
  for (std::size_t b = 0; b < buckets_.size(); ++b) start_gather(b);
  finish_gather();
}

OptimizerShards::FullState OptimizerShards::gather_state(const std::optional<torch::Device>& into) {
  const StateKind& kind = *kind_;
  auto& state = optimizer_->state();
  const std::size_t n_fields = kind.fields;
  // Whether any rank has state, and which fields are defined (the options
  // decide, the same everywhere; a rank without pieces cannot tell alone).
  // The per-parameter step counters are the same in every piece.
  torch::Tensor info = torch::zeros({static_cast<std::int64_t>(1 + n_fields + params_.size())},
                                    torch::kInt64);
  auto* iv = info.data_ptr<std::int64_t>();
  for (std::size_t i = 0; i < pieces_.size(); ++i) {
    const auto it = state.find(state_key(pieces_[i]));
    if (it == state.end()) continue;
    iv[0] = 1;
    const auto fields = kind.tensors(*it->second);
    for (std::size_t f = 0; f < n_fields; ++f) iv[1 + f] |= fields[f].defined() ? 1 : 0;
    iv[1 + n_fields + piece_info_[i].param] = kind.step(*it->second);
  }
  group_.allreduce(info, comm::ReduceOp::Max);
  iv = info.data_ptr<std::int64_t>();
  FullState out;
  out.per_param.resize(params_.size());
  if (iv[0] == 0) return out;
  std::vector<std::size_t> defined;
  for (std::size_t f = 0; f < n_fields; ++f) {
    if (iv[1 + f] != 0) defined.push_back(f);
  }
  const std::int64_t nd = static_cast<std::int64_t>(defined.size());
  // Parameters the optimizer steps: those with pieces somewhere.
  std::set<compat::OptimizerStateKey> in_groups;
  for (const auto& params : group_params_) {
    for (const auto& t : params) in_groups.insert(state_key(t));
  }
  std::vector<std::vector<torch::Tensor>> fields(params_.size(),
                                                 std::vector<torch::Tensor>(n_fields));
  // One allgatherv per bucket: this rank's slice of every defined field,
  // one bucket at a time, so that no more than one bucket's gathered state
  // is in flight beside the full state being built (on a GPU, the full
  // state of an optimizer sharded because it did not fit is large).
  for (std::size_t b = 0; b < buckets_.size(); ++b) {
    const std::int64_t len = ranges_[b].length;
    const auto options = params_[buckets_[b].params[0]].options().requires_grad(false);
    torch::Tensor local = torch::zeros({nd * len}, options);
    for (std::size_t i = 0; i < pieces_.size(); ++i) {
      const Piece& piece = piece_info_[i];
      if (piece.bucket != b) continue;
      const auto it = state.find(state_key(pieces_[i]));
      if (it == state.end()) continue;
      const auto values = kind.tensors(*it->second);
      for (std::int64_t d = 0; d < nd; ++d) {
        local.narrow(0, d * len + piece.slice_offset, piece.length)
            .copy_(values[defined[d]].reshape({-1}));
      }
    }
    torch::Tensor all = group_.allgatherv(local);
    local = torch::Tensor();
    const auto out_options = into ? options.device(*into) : options;
    if (into) all = all.to(*into);
    const Bucket& bucket = buckets_[b];
    // Rank r's part holds nd fields of its slice: reorder into one flat
    // bucket-shaped tensor per field.
    std::vector<torch::Tensor> flat(nd);
    for (auto& t : flat) t = torch::empty({bucket.numel}, out_options);
    std::int64_t at = 0;
    for (int r = 0; r < group_.size(); ++r) {
      const ShardRange range = shard_range(bucket.numel, r, group_.size());
      for (std::int64_t d = 0; d < nd; ++d) {
        flat[d].narrow(0, range.offset, range.length)
            .copy_(all.narrow(0, at + d * range.length, range.length));
      }
      at += nd * range.length;
    }
    for (std::size_t k = 0; k < bucket.params.size(); ++k) {
      const std::size_t p = bucket.params[k];
      for (std::int64_t d = 0; d < nd; ++d) {
        fields[p][defined[d]] =
            flat[d].narrow(0, bucket.offsets[k], params_[p].numel()).view(params_[p].sizes()).clone();
      }
    }
  }
  for (std::size_t p = 0; p < params_.size(); ++p) {
    if (in_groups.count(state_key(params_[p])) != 0) out.per_param[p] = kind.make(fields[p], iv[1 + n_fields + p]);
  }
  return out;
}

void OptimizerShards::with_full_form(
    const std::function<void(const torch::optim::Optimizer&)>& use) {
  TNT_CHECK(!released_, "OptimizerShards: used after unshard()");
  FullState full = gather_state(torch::Device(torch::kCPU));
  auto& state = optimizer_->state();
  auto& groups = optimizer_->param_groups();
  // Swap the full form in, then back.
  std::remove_reference_t<decltype(state)> sharded;
  std::swap(sharded, state);
  std::vector<std::vector<torch::Tensor>> sharded_params;
  for (std::size_t g = 0; g < groups.size(); ++g) {
    sharded_params.push_back(std::exchange(groups[g].params(), group_params_[g]));
  }
  for (std::size_t p = 0; p < params_.size(); ++p) {
    if (full.per_param[p]) state[state_key(params_[p])] = std::move(full.per_param[p]);
  }
  auto restore = [&] {
    std::swap(sharded, state);
    for (std::size_t g = 0; g < groups.size(); ++g) groups[g].params() = sharded_params[g];
  };
  try {
    use(*optimizer_);
  } catch (...) {
    restore();
    throw;
  }
  restore();
}

void OptimizerShards::unshard() {
  TNT_CHECK(!released_, "OptimizerShards: unshard() called twice");
  FullState full = gather_state(std::nullopt);
  auto& state = optimizer_->state();
  for (const auto& t : pieces_) state.erase(state_key(t));
  auto& groups = optimizer_->param_groups();
  for (std::size_t g = 0; g < groups.size(); ++g) groups[g].params() = group_params_[g];
  for (std::size_t p = 0; p < params_.size(); ++p) {
    if (full.per_param[p]) state[state_key(params_[p])] = std::move(full.per_param[p]);
  }
  pieces_.clear();
  piece_info_.clear();
  bucket_pieces_.clear();
  slices_.clear();
  released_ = true;
}

}  // namespace tnt::dp
