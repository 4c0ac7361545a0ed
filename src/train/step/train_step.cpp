#include "train/step/train_step.h"

#include <algorithm>
#include <utility>

#include <fmt/format.h>
#include <torch/torch.h>

#include <tarantella/base/error.h>

#include "dp/bucket_steps.h"
#include "dp/optimizer_shards.h"
#include "train/step/autotune.h"
#include "train/step/clip_norm.h"
#include "train/step/deterministic_step.h"
#include "train/step/metrics_accumulator.h"
#include "train/step/stage_forward.h"

namespace tnt::train {

CyclePoint cycle_at(std::int64_t step, int k, std::int64_t steps_total) {
  CyclePoint c;
  c.start = step - step % k;
  c.length = steps_total > 0 ? std::min<std::int64_t>(k, steps_total - c.start) : k;
  c.reduce = (step + 1) % k == 0 || (steps_total > 0 && step + 1 == steps_total);
  return c;
}

Step::Step(std::size_t state_size, torch::Device device)
    : pending_(torch::zeros({static_cast<std::int64_t>(state_size)},
                            torch::TensorOptions().dtype(torch::kFloat64).device(device))) {}

OverlapMeter Step::take_overlap() { return std::exchange(overlap_, OverlapMeter()); }

void Step::add_pending(const torch::Tensor& increment) { accumulate(pending_, increment); }

torch::Tensor Step::take_pending() {
  torch::Tensor out = torch::zeros_like(pending_);
  std::swap(out, pending_);
  return out;
}

std::unique_ptr<Step> make_step(StepContext context) {
  if (context.deterministic_chunk) return std::make_unique<DeterministicStep>(std::move(context));
  return std::make_unique<TrainStep>(std::move(context));
}

TrainStep::TrainStep(StepContext context)
    : Step(static_cast<std::size_t>(context.state_size), context.device),
      c_(std::move(context)),
      update_(c_.gradients.updates_per_bucket() && !c_.rules.needs_all_gradients()
                  ? Update::kPerBucket
                  : Update::kAfterSync),
      device_clock_(c_.device) {}

StepResult TrainStep::run(const StepInput& in) {
  // A new auto-tuned setting only between cycles.
  AutoTuner* tuner = c_.gradients.autotuner();
  dp::GradientSynchronizer& sync =
      tuner && in.step == in.cycle.start ? c_.gradients.retune() : c_.gradients.synchronizer();
  StepResult result;
  forward_backward(in, sync, result.times);
  if (in.cycle.reduce && update_ == Update::kPerBucket) {
    update_per_bucket(sync, result);
  } else {
    update_after_sync(sync, in.cycle.reduce, result);
  }
  StepTimes& t = result.times;
  t.step_end = Clock::now();
  device_clock_.mark(DeviceStepClock::kStepEnd);
  t.device_compute = device_clock_.end_step();
  if (c_.stage && c_.timeline) {
    std::vector<StageLink::Event> link_events = c_.stage->take_events();
    slices_.insert(slices_.end(), std::make_move_iterator(link_events.begin()),
                   std::make_move_iterator(link_events.end()));
  }
  record_step(c_.timeline, overlap_, sync, in.cycle.reduce, t, c_.stage ? &slices_ : nullptr);
  slices_.clear();
  if (c_.stage) t.waited += c_.stage->take_waited();  // on a neighbour stage
  if (in.cycle.reduce) {
    result.local_state = take_pending();
    if (c_.stage) share_last_stage_state(*c_.stage, result);
    if (tuner) tuner->record(std::chrono::duration<double>(t.step_end - t.forward_begin).count());
  }
  return result;
}

// The step as its stage's schedule of micro-batch forwards and backwards
// (stages/schedule.h). Without stages that is one micro-batch: forward,
// then backward, whose hooks send the buckets to the allreduce. With P
// stages and M micro-batches, the forwards take their inputs from the
// previous stage and send their outputs on; the backwards take the output's
// gradient from the next stage and send the input's back. Every backward
// arms the gradient engine with its micro-batch's weight n_i / (B * cycle);
// only the last one of the step reduces (as the last micro-step of an
// accumulation cycle does), so the allreduce of each stage's gradients over
// its replicas overlaps the last backward.
void TrainStep::forward_backward(const StepInput& in, dp::GradientSynchronizer& sync,
                                 StepTimes& t) {
  t.data_begin = in.data_begin;
  t.data_end = in.data_end;
  t.forward_begin = Clock::now();
  device_clock_.mark(DeviceStepClock::kForwardBegin);
  StageLink* link = c_.stage.get();
  // A pipeline whose replica got no sample (a short last batch) skips the
  // work on every stage alike; it still joins its stage's allreduce.
  const std::vector<data::MicroBatch> parts =
      link != nullptr && in.mb.local_size == 0 ? std::vector<data::MicroBatch>{}
                                               : micro_batches_of(in.mb, c_.micro_batches);
  std::vector<InFlight> flights(parts.size());
  bool backward_started = false;
  const int stage = link != nullptr ? link->layout().stage : 0;
  const int stage_count = link != nullptr ? link->layout().stages : 1;
  // With stages, the timeline shows each micro-batch's forward and
  // backward, and the link's transfers (record_step).
  const bool tracing = link != nullptr && c_.timeline != nullptr;
  if (tracing) link->trace(true);
  if (!parts.empty()) {
    for (const stages::Action& a : stages::stage_actions(c_.schedule, stage, stage_count,
                                                          static_cast<int>(parts.size()))) {
      const auto i = static_cast<std::size_t>(a.micro_batch);
      if (a.kind == stages::Action::forward) {
        flights[i] = forward_part(parts[i], a.micro_batch);
        if (tracing) {
          slices_.push_back({fmt::format("forward {}", a.micro_batch), flights[i].stage.began,
                             Clock::now()});
        }
        continue;
      }
      if (!backward_started) {
        t.backward_begin = Clock::now();
        backward_started = true;
      }
      const bool last = i + 1 == parts.size();
      const StageBackward b =
          backward_part(in, parts[i], flights[i], a.micro_batch, in.cycle.reduce && last, sync);
      if (tracing) {
        // A split backward: the input's gradient, then the weights'.
        const Clock::time_point end = Clock::now();
        slices_.push_back({fmt::format("backward {}", a.micro_batch), b.began,
                           b.weights.value_or(end)});
        if (b.weights) slices_.push_back({fmt::format("weights {}", a.micro_batch), *b.weights, end});
      }
      flights[i] = InFlight();  // the micro-batch's activations are freed
    }
  } else {
    sync.begin_step(0.0, in.cycle.reduce, pending());
    t.backward_begin = Clock::now();
  }
  if (link != nullptr) link->finish_sends();
  if (tracing) link->trace(false);
  t.backward_end = Clock::now();
  device_clock_.mark(DeviceStepClock::kBackwardEnd);
}

// A rank with an empty micro-batch (a short last batch smaller than the
// number of ranks) contributes zeros, so every rank runs the same
// collectives. The model decides whether its network runs on the empty
// batch (StepModel::forward): one whose layers communicate must, and then
// backward runs too, from the empty output, for those layers'
// collectives; there is no loss or state to add. Only the last stage has a
// loss.
TrainStep::InFlight TrainStep::forward_part(const data::MicroBatch& part, int micro) {
  InFlight f;
  f.stage = forward_checked(part, micro);
  const bool last_stage = !c_.stage || c_.stage->layout().last_stage();
  if (!last_stage) return f;
  if (part.local_size > 0) {
    const torch::Tensor target = c_.model.target(part.tensors);
    f.loss = c_.model.loss(f.stage.output, target);
    add_pending(c_.model.state(f.stage.output, target, f.loss, part.local_size));
  }
  return f;
}

StageBackward TrainStep::backward_part(const StepInput& in, const data::MicroBatch& part,
                                           InFlight& f, int micro, bool reduce,
                                           dp::GradientSynchronizer& sync) {
  const double weight = static_cast<double>(part.local_size) /
                        static_cast<double>(in.global_size * in.cycle.length);
  sync.begin_step(weight, reduce, pending());
  torch::Tensor root;  // on the last stage, or without stages
  if (f.loss.defined()) {
    root = c_.rules.scaler ? f.loss * c_.rules.scaler->scale() : f.loss;
  } else if (f.stage.output.defined() && f.stage.output.requires_grad()) {
    root = f.stage.output.sum();
  }
  return backward_on_stage(f.stage, root, c_.stage.get(), micro);
}

void share_last_stage_state(const StageLink& link, StepResult& r) {
  const auto n = r.local_state.numel();
  // On the local state's device: deterministic mode's global state is
  // summed on the host.
  const torch::Tensor both = link.from_last_stage(torch::cat(
      {r.global_state.to(r.local_state.device(), torch::kFloat64), r.local_state}));
  r.global_state = both.narrow(0, 0, n);
  r.local_state = both.narrow(0, n, n);
}

void TrainStep::update_after_sync(dp::GradientSynchronizer& sync, bool reduce, StepResult& r) {
  r.global_state = sync.finish();
  r.times.sync_end = Clock::now();
  device_clock_.mark(DeviceStepClock::kSyncEnd);
  // finish() is the wait for the buckets (and the copy out of the last ones).
  r.times.waited = r.times.sync_end - r.times.backward_end;
  if (!reduce) return;
  dp::OptimizerShards* shards = c_.gradients.shards();
  if (shards) shards->set_gradients(sync.reduced_slices());
  r.stepped =
      apply_update(c_.trainable, c_.optimizer, c_.rules, c_.counters.optimizer_steps, shards);
}

// Each bucket's step as soon as it is reduced; a sharded bucket's slice
// leaves for the allgather right after its step.
void TrainStep::update_per_bucket(dp::GradientSynchronizer& sync, StepResult& r) {
  std::int64_t& optimizer_steps = c_.counters.optimizer_steps;
  set_learning_rate(c_.optimizer, c_.rules, optimizer_steps);
  dp::OptimizerShards* shards = c_.gradients.shards();
  dp::BucketSteps* bucket_steps = c_.gradients.bucket_steps();
  TNT_CHECK(shards || bucket_steps,
            "internal error: a per-bucket update without sharded or per-bucket optimizer steps");
  std::size_t stepped = 0;
  // finish() waits for the buckets and runs their optimizer steps: the wait
  // is its time less the steps'.
  Clock::duration stepping{};
  r.global_state = sync.finish([&](std::size_t b) {
    const auto begin = Clock::now();
    if (shards) {
      shards->set_gradient(b, sync.reduced_slices()[b]);
      shards->step_bucket(b);
      shards->start_gather(b);
    } else {
      bucket_steps->step(b);
    }
    ++stepped;
    stepping += Clock::now() - begin;
  });
  r.times.sync_end = Clock::now();
  device_clock_.mark(DeviceStepClock::kSyncEnd);
  r.times.waited = r.times.sync_end - r.times.backward_end - stepping;
  if (stepped == 0) {
    // No bucket went out (nothing to reduce): .grad is the answer.
    if (shards) shards->set_gradients(sync.reduced_slices());
    r.stepped = apply_update(c_.trainable, c_.optimizer, c_.rules, optimizer_steps, shards);
    return;
  }
  if (shards) {
    const auto begin = Clock::now();
    shards->finish_gather();
    r.times.waited += Clock::now() - begin;
  }
  ++optimizer_steps;
  r.stepped = true;
}

void set_learning_rate(torch::optim::Optimizer& optimizer, const StepRules& rules,
                       std::int64_t optimizer_steps) {
  if (!rules.schedule) return;
  const double lr = rules.schedule(optimizer_steps);
  for (auto& group : optimizer.param_groups()) group.options().set_lr(lr);
}

namespace {

// clip_grad_norm_ over gradients that are split over the ranks: the norm is
// of all of them (allreduces over the shards' group, then over the other
// stages), the scaling as torch::nn::utils does it.
void clip_sharded_norm(std::vector<torch::Tensor>& pieces, double max_norm,
                       const comm::ProcessGroup& group, const comm::ProcessGroup* stages) {
  // Summed on the gradients' device, then one copy to the host: one sync per
  // step, not one per piece.
  std::vector<torch::Tensor> squares;
  for (const auto& p : pieces) {
    if (p.grad().defined()) squares.push_back(p.grad().to(torch::kFloat64).pow(2).sum());
  }
  torch::Tensor total =
      squares.empty() ? torch::zeros({1}, torch::kFloat64)
                      : torch::stack(squares).sum().reshape({1}).cpu();  // host-sync: clipping by norm (docs/performance.md)
  group.allreduce(total, comm::ReduceOp::Sum);
  if (stages != nullptr) stages->allreduce(total, comm::ReduceOp::Sum);
  const double norm = std::sqrt(total.item<double>());  // host-only: the allreduced host value
  const double coef = max_norm / (norm + 1e-6);
  if (coef >= 1.0) return;
  torch::NoGradGuard no_grad;
  for (auto& p : pieces) {
    if (p.grad().defined()) p.mutable_grad().mul_(coef);
  }
}

// clip_grad_norm_ over a model cut into stages, in LibTorch's own arithmetic
// (each gradient's norm, the norm of those, a coefficient of their dtype
// clamped at 1) with every stage's gradient norms in the model's order: the
// unsplit model's result to the bit.
void clip_norm_over_stages(std::vector<torch::Tensor>& trainable, double max_norm,
                           const comm::ProcessGroup& stages) {
  std::vector<torch::Tensor> with_grad;
  std::vector<torch::Tensor> norms;
  for (const auto& p : trainable) {
    if (!p.grad().defined()) continue;
    with_grad.push_back(p);
    norms.push_back(p.grad().norm(2).reshape({1}));
  }
  // The norms travel in float64 (exact for every floating dtype), so that a
  // stage without gradients, or in another precision, sends what the others
  // do. The norm of the norms is taken in the dtype that LibTorch's stack of
  // the whole model's norms would have: every stage's promoted. Each stage
  // sends [its dtype, its count, its norms] in one allgatherv (the dtype as
  // a number, -1 for a stage without gradients).
  const auto promote = [](std::int64_t a, std::int64_t b) {
    if (a < 0 || b < 0) return std::max(a, b);
    return static_cast<std::int64_t>(
        c10::promoteTypes(static_cast<torch::ScalarType>(a), static_cast<torch::ScalarType>(b)));
  };
  std::int64_t promoted = -1;
  for (const auto& n : norms) promoted = promote(promoted, static_cast<std::int64_t>(n.scalar_type()));
  const torch::Tensor head =
      torch::tensor({static_cast<double>(promoted), static_cast<double>(norms.size())},
                    torch::kFloat64);
  const torch::Tensor mine = norms.empty() ? head
                                           : torch::cat({head, torch::cat(norms).to(torch::kFloat64).cpu()});  // host-sync: clipping by norm (docs/performance.md)
  // Stage order is the model's order: rank s of the pipeline is stage s.
  const torch::Tensor gathered = stages.allgatherv(mine);
  if (with_grad.empty()) return;
  std::int64_t agreed = -1;
  std::vector<torch::Tensor> all_norms;
  const double* g = gathered.data_ptr<double>();  // host-only: gathered in host memory
  for (std::int64_t at = 0; at < gathered.numel();) {
    const auto count = static_cast<std::int64_t>(g[at + 1]);
    agreed = promote(agreed, static_cast<std::int64_t>(g[at]));
    if (count > 0) all_norms.push_back(gathered.narrow(0, at + 2, count));
    at += 2 + count;
  }
  // The norm of the norms on the gradients' device, as clip_grad_norm_ takes
  // it: a GPU sums the 2-norm in another order than the CPU, and one bit of
  // the total changes every weight.
  const torch::Tensor all =
      torch::cat(all_norms).to(with_grad[0].grad().device(), static_cast<torch::ScalarType>(agreed));
  scale_to_norm(with_grad, all.numel() == 1 ? all[0] : all.norm(2), max_norm);
}

}  // namespace

bool apply_update(std::vector<torch::Tensor>& trainable, torch::optim::Optimizer& optimizer,
                  const StepRules& rules, std::int64_t& optimizer_steps,
                  dp::OptimizerShards* shards) {
  std::vector<torch::Tensor> pieces;
  if (shards) pieces = shards->pieces();
  std::vector<torch::Tensor>& grads_of = shards ? pieces : trainable;
  if (rules.scaler) {
    // Every shard and every stage skips the step, or none.
    std::function<bool(bool)> agree;
    if (shards || rules.stages) {
      agree = [shards, &rules](bool finite) {
        torch::Tensor flag = torch::tensor({finite ? 1 : 0}, torch::kInt32);
        if (shards) shards->group().allreduce(flag, comm::ReduceOp::Min);
        if (rules.stages) rules.stages->allreduce(flag, comm::ReduceOp::Min);
        return flag.item<int>() != 0;  // host-only: a host tensor
      };
    }
    if (!rules.scaler->unscale_or_skip(grads_of, agree)) return false;
  }
  // Gradients are the global ones here, identical on every rank, so
  // clipping agrees everywhere (as in serial training).
  if (rules.clip_norm) {
    if (shards) {
      clip_sharded_norm(pieces, *rules.clip_norm, shards->group(), rules.stages);
    } else if (rules.stages) {
      clip_norm_over_stages(trainable, *rules.clip_norm, *rules.stages);
    } else {
      clip_grad_norm_on_device(trainable, *rules.clip_norm);  // no host read (clip_norm.h)
    }
  }
  if (rules.clip_value) torch::nn::utils::clip_grad_value_(grads_of, *rules.clip_value);
  set_learning_rate(optimizer, rules, optimizer_steps);
  optimizer.step();
  if (shards) shards->gather_parameters();
  ++optimizer_steps;
  return true;
}

StageForward TrainStep::forward_checked(const data::MicroBatch& mb, int micro) {
  try {
    return forward_on_stage(c_.model, c_.stage.get(), mb, micro, /*training=*/true);
  } catch (const c10::Error& e) {
    // LibTorch's message alone ("mat1 and mat2 shapes cannot be
    // multiplied") does not say that the data is the likely culprit.
    std::string shapes;
    for (const auto& x : mb.tensors) {
      shapes += (shapes.empty() ? "" : ", ") + ::tnt::detail::concat(x.sizes());
    }
    const std::string what = e.what_without_backtrace();
    // A device mismatch inside forward is the model's, not the data's: the
    // batch is on the model's device.
    const bool devices = what.find("same device") != std::string::npos ||
                         what.find("Input type (") != std::string::npos;  // a convolution's
    ::tnt::detail::throw_error(::tnt::detail::concat(
        "the model's forward() failed on a micro-batch of ", mb.local_size,
        " samples with element tensors of shapes ", shapes,
        mb.tensors.empty() ? std::string() : ::tnt::detail::concat(" on ", mb.tensors[0].device()),
        ": ", what,
        devices ? ": the batch is on the model's device; a tensor that forward() makes or keeps "
                  "is elsewhere: register it as a buffer (register_buffer, so that it moves "
                  "with the model), or make it with the input's options (torch::zeros(sizes, "
                  "x.options()))"
                : ": check that the dataset's elements have the shape the model's input "
                  "expects"));
  }
  return {};
}

void record_step(Timeline* timeline, OverlapMeter& overlap, const dp::GradientSynchronizer& sync,
                 bool reduce, const StepTimes& t, const std::vector<StageLink::Event>* stage) {
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
  if (stage != nullptr) {
    for (const StageLink::Event& e : *stage) {
      timeline->slice(e.send ? Timeline::kStageLink : Timeline::kCompute, e.name, e.begin, e.end);
    }
  } else {
    timeline->slice(Timeline::kCompute, "forward", t.forward_begin, t.backward_begin);
    timeline->slice(Timeline::kCompute, "backward", t.backward_begin, t.backward_end);
  }
  timeline->slice(Timeline::kCompute, "wait for gradients", t.backward_end, t.sync_end);
  if (reduce) timeline->slice(Timeline::kCompute, "optimizer step", t.sync_end, t.step_end);
}

void accumulate(torch::Tensor& into, const torch::Tensor& values) {
  TNT_CHECK(into.numel() == values.numel(), "state of ", values.numel(), " values does not fit ",
            into.numel());
  // A metric may compute its state on the CPU: a small copy to the device,
  // queued without waiting (state_on).
  into.add_(state_on(values, into.device()));
}

}  // namespace tnt::train
