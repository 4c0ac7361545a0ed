#include "train/train_step.h"

#include <fmt/format.h>
#include <torch/torch.h>

#include <tarantella/base/error.h>

#include "dp/optimizer_shards.h"

namespace tnt::train {

TrainStep::TrainStep(StepModel model, std::vector<torch::Tensor> trainable,
                     torch::optim::Optimizer& optimizer, StepRules rules)
    : model_(std::move(model)),
      trainable_(std::move(trainable)),
      optimizer_(optimizer),
      rules_(std::move(rules)) {}

StepResult TrainStep::run(const data::MicroBatch& mb, dp::GradientSynchronizer& sync,
                          double weight, bool reduce, std::vector<double>& pending,
                          std::int64_t& optimizer_steps, Clock::time_point data_begin,
                          Clock::time_point data_end, dp::OptimizerShards* shards,
                          dp::BucketSteps* bucket_steps) {
  StepResult result;
  StepTimes& t = result.times;
  t.data_begin = data_begin;
  t.data_end = data_end;
  t.forward_begin = Clock::now();
  torch::Tensor loss;
  // A rank with an empty micro-batch (a short last batch smaller than the
  // number of ranks) contributes zeros, so every rank runs the same
  // collectives. The model decides whether its network runs on the empty
  // batch (StepModel::forward): one whose layers communicate must, and then
  // backward runs too, from the empty output, for those layers'
  // collectives; there is no loss or state to add.
  torch::Tensor empty_output;
  if (mb.local_size > 0) {
    const torch::Tensor output = forward_checked(mb);
    const torch::Tensor target = model_.target(mb.tensors);
    loss = model_.loss(output, target);
    accumulate(pending, model_.state(output, target, loss, mb.local_size));
  } else {
    empty_output = forward_checked(mb);
  }
  sync.begin_step(weight, reduce, torch::tensor(pending, torch::kFloat64));
  t.backward_begin = Clock::now();
  if (loss.defined()) {
    (rules_.scaler ? loss * rules_.scaler->scale() : loss).backward();
  } else if (empty_output.defined() && empty_output.requires_grad()) {
    empty_output.sum().backward();
  }
  t.backward_end = Clock::now();
  const bool per_bucket = reduce && (shards || bucket_steps) && !rules_.scaler &&
                          !rules_.clip_norm && !rules_.clip_value;
  if (per_bucket) {
    // Each bucket's step as soon as it is reduced; a sharded bucket's slice
    // leaves for the allgather right after its step.
    set_learning_rate(optimizer_, rules_, optimizer_steps);
    std::size_t stepped = 0;
    result.global_state = sync.finish([&](std::size_t b) {
      if (shards) {
        shards->set_gradient(b, sync.reduced_slices()[b]);
        shards->step_bucket(b);
        shards->start_gather(b);
      } else {
        bucket_steps->step(b);
      }
      ++stepped;
    });
    t.sync_end = Clock::now();
    if (stepped == 0) {
      // One rank: autograd's .grad was the answer, no bucket went out.
      if (shards) shards->set_gradients(sync.reduced_slices());
      result.stepped = apply_update(trainable_, optimizer_, rules_, optimizer_steps, shards);
    } else {
      if (shards) shards->finish_gather();
      ++optimizer_steps;
      result.stepped = true;
    }
    t.step_end = Clock::now();
    return result;
  }
  result.global_state = sync.finish();
  t.sync_end = Clock::now();
  if (reduce && shards) shards->set_gradients(sync.reduced_slices());
  if (reduce) result.stepped = apply_update(trainable_, optimizer_, rules_, optimizer_steps, shards);
  t.step_end = Clock::now();
  return result;
}

void set_learning_rate(torch::optim::Optimizer& optimizer, const StepRules& rules,
                       std::int64_t optimizer_steps) {
  if (!rules.schedule) return;
  const double lr = rules.schedule(optimizer_steps);
  for (auto& group : optimizer.param_groups()) group.options().set_lr(lr);
}

namespace {

// clip_grad_norm_ over gradients that are split over the ranks: the norm is
// of all of them (one allreduce), the scaling as torch::nn::utils does it.
void clip_sharded_norm(std::vector<torch::Tensor>& pieces, double max_norm,
                       const comm::ProcessGroup& group) {
  double local = 0.0;
  for (const auto& p : pieces) {
    if (p.grad().defined()) local += p.grad().to(torch::kFloat64).pow(2).sum().item<double>();
  }
  torch::Tensor total = torch::tensor({local}, torch::kFloat64);
  group.allreduce(total, comm::ReduceOp::Sum);
  const double norm = std::sqrt(total.item<double>());
  const double coef = max_norm / (norm + 1e-6);
  if (coef >= 1.0) return;
  torch::NoGradGuard no_grad;
  for (auto& p : pieces) {
    if (p.grad().defined()) p.mutable_grad().mul_(coef);
  }
}

}  // namespace

bool apply_update(std::vector<torch::Tensor>& trainable, torch::optim::Optimizer& optimizer,
                  const StepRules& rules, std::int64_t& optimizer_steps,
                  dp::OptimizerShards* shards) {
  std::vector<torch::Tensor> pieces;
  if (shards) pieces = shards->pieces();
  std::vector<torch::Tensor>& grads_of = shards ? pieces : trainable;
  if (rules.scaler) {
    std::function<bool(bool)> agree;
    if (shards) {
      agree = [shards](bool finite) {
        torch::Tensor flag = torch::tensor({finite ? 1 : 0}, torch::kInt32);
        shards->group().allreduce(flag, comm::ReduceOp::Min);
        return flag.item<int>() != 0;
      };
    }
    if (!rules.scaler->unscale_or_skip(grads_of, agree)) return false;
  }
  // Gradients are the global ones here, identical on every rank, so
  // clipping agrees everywhere (as in serial training).
  if (rules.clip_norm) {
    if (shards) {
      clip_sharded_norm(pieces, *rules.clip_norm, shards->group());
    } else {
      torch::nn::utils::clip_grad_norm_(trainable, *rules.clip_norm);
    }
  }
  if (rules.clip_value) torch::nn::utils::clip_grad_value_(grads_of, *rules.clip_value);
  set_learning_rate(optimizer, rules, optimizer_steps);
  optimizer.step();
  if (shards) shards->gather_parameters();
  ++optimizer_steps;
  return true;
}

torch::Tensor TrainStep::forward_checked(const data::MicroBatch& mb) {
  try {
    return model_.forward(mb.tensors);
  } catch (const c10::Error& e) {
    // LibTorch's message alone ("mat1 and mat2 shapes cannot be
    // multiplied") does not say that the data is the likely culprit.
    std::string shapes;
    for (const auto& x : mb.tensors) {
      shapes += (shapes.empty() ? "" : ", ") + ::tnt::detail::concat(x.sizes());
    }
    ::tnt::detail::throw_error(::tnt::detail::concat(
        "the model's forward() failed on a micro-batch of ", mb.local_size,
        " samples with element tensors of shapes ", shapes, ": ", e.what_without_backtrace(),
        ": check that the dataset's elements have the shape the model's input expects"));
  }
  return {};
}

void record_step(Timeline* timeline, OverlapMeter& overlap, const dp::GradientSynchronizer& sync,
                 bool reduce, const StepTimes& t) {
  const auto& handles = sync.last_handles();
  const auto& enqueued = sync.last_enqueued();
  if (reduce) {
    for (std::size_t b = 0; b < handles.size(); ++b) {
      if (!handles[b].valid()) continue;
      const auto started = handles[b].started();
      const auto finished = handles[b].finished();
      if (!started || !finished) continue;
      overlap.add(t.backward_begin, t.backward_end, *started, *finished);
      if (timeline) {
        const std::string name = fmt::format("allreduce bucket {}", b);
        timeline->instant(Timeline::kAllreduce, "enqueue bucket " + std::to_string(b),
                          enqueued[b]);
        timeline->slice(Timeline::kAllreduce, name, *started, *finished);
      }
    }
  }
  if (!timeline) return;
  timeline->slice(Timeline::kCompute, "wait for data", t.data_begin, t.data_end);
  timeline->slice(Timeline::kCompute, "forward", t.forward_begin, t.backward_begin);
  timeline->slice(Timeline::kCompute, "backward", t.backward_begin, t.backward_end);
  timeline->slice(Timeline::kCompute, "wait for gradients", t.backward_end, t.sync_end);
  if (reduce) timeline->slice(Timeline::kCompute, "optimizer step", t.sync_end, t.step_end);
}

void accumulate(std::vector<double>& into, const torch::Tensor& values) {
  const torch::Tensor v = values.to(torch::kFloat64).contiguous();
  TNT_CHECK(static_cast<std::int64_t>(into.size()) == v.numel(), "state of ", v.numel(),
            " values does not fit ", into.size());
  for (std::size_t i = 0; i < into.size(); ++i) into[i] += v.data_ptr<double>()[i];
}

}  // namespace tnt::train
