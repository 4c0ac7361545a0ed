// evaluate and predict over the loops' contexts: each rank runs its micro-batches of
// every global batch (evaluate: of the first `steps`, when given). evaluate() sums the loss/metric state locally and
// reduces it once at the end (exact global metrics, one collective; in
// deterministic mode an exact sum of every chunk's state); predict()
// gathers the outputs once at the end and puts them back into dataset order.
#include "train/loop/evaluate_loop.h"

#include <c10/core/Stream.h>
#include <c10/core/impl/VirtualGuardImpl.h>
#include <torch/torch.h>

#include <algorithm>
#include <optional>

#include <tarantella/base/argument_error.h>
#include <tarantella/base/error.h>
#include <tarantella/base/logging.h>
#include <tarantella/data/dataset.h>
#include <tarantella/data/distribute.h>
#include <tarantella/train/progbar_logger.h>

#include "dp/exact_sum.h"
#include "train/loop/callback_list.h"
#include "train/step/deterministic_step.h"
#include "train/step/stage_forward.h"
#include "train/loop/fit_checks.h"
#include "train/observe/host_reads.h"
#include "train/observe/skipped_samples.h"
#include "train/step/train_step.h"

namespace tnt::train {
namespace {

data::DistributedDataset distribute_for(const comm::ProcessGroup& group,
                                        const data::Dataset& dataset, bool enabled,
                                        const std::optional<std::int64_t>& micro_batch,
                                        torch::Device device, std::int64_t granularity = 1) {
  data::DistributeOptions d;
  // On a GPU: batches collated into pinned memory ahead of the forward.
  d.group(group)
      .enabled(enabled)
      .granularity(granularity)
      .pin_memory(device.is_cuda())
      .pin_memory_device(device);
  if (micro_batch) d.micro_batch_size(*micro_batch);
  return data::distribute(dataset, d);
}

// The loss/metric state of an evaluation: summed locally per micro-batch,
// or per chunk in deterministic mode (summed exactly over all ranks later).
// It sees the model as a step does (StepModel) and the group, nothing else
// of the engine.
class EvaluationState {
 public:
  EvaluationState(StepModel model, const comm::ProcessGroup& group, std::int64_t state_size,
                  torch::Device device, std::optional<std::int64_t> chunk, StageLink* stage,
                  int micro_batches)
      : model_(std::move(model)), group_(group), chunk_(chunk), stage_(stage),
        micro_batches_(micro_batches),
        local_(torch::zeros({state_size},
                            torch::TensorOptions().dtype(torch::kFloat64).device(device))) {}

  void add(const data::MicroBatch& mb) {
    if (chunk_) {  // with stages, the chunks are the micro-batches
      const std::size_t before = parts_.size();
      evaluate_chunks(model_, mb, *chunk_, parts_, stage_);
      for (std::size_t j = before; j < parts_.size(); ++j) accumulate(local_, parts_[j][0]);
      total_parts_ += chunk_count(mb.global_size, *chunk_);
      if (stage_ != nullptr) reported_ = stage_->from_last_stage(local_.clone());
      return;
    }
    if (mb.local_size == 0) return;  // on every stage of the pipeline alike
    // With stages, the replica's share runs through them as micro-batches;
    // the last stage has the loss and metrics.
    const auto parts = micro_batches_of(mb, micro_batches_);
    for (std::size_t i = 0; i < parts.size(); ++i) {
      const StageForward f = forward_on_stage(model_, stage_, parts[i], static_cast<int>(i), false);
      if (stage_ != nullptr && !stage_->layout().last_stage()) continue;
      const torch::Tensor target = model_.target(parts[i].tensors);
      accumulate(local_, model_.state(f.output, target, model_.loss(f.output, target),
                                      parts[i].local_size));
    }
    if (stage_ == nullptr) return;
    stage_->finish_sends();
    // Every stage reports the last stage's state; shared after each batch
    // (a small broadcast), since a callback may read it on any rank.
    reported_ = stage_->from_last_stage(local_.clone());
  }
  /// This rank's state so far, on the device (with stages, its pipeline's
  /// last stage's).
  const torch::Tensor& local() const { return reported_.defined() ? reported_ : local_; }
  /// The global state. Collective.
  std::vector<double> global() const {
    std::vector<double> sum;
    if (chunk_) {
      const torch::Tensor like = torch::zeros({local_.numel()}, torch::kFloat64);
      sum = read_state(dp::exact_sum(group_, parts_, {like}, total_parts_).front());
    } else {
      sum = allreduce_state(group_, read_state(local_));
    }
    if (stage_ == nullptr) return sum;
    return read_state(stage_->from_last_stage(torch::tensor(sum, torch::kFloat64)));
  }

 private:
  StepModel model_;
  const comm::ProcessGroup& group_;
  std::optional<std::int64_t> chunk_;
  StageLink* stage_;
  int micro_batches_;
  torch::Tensor local_;  // float64, on the device
  torch::Tensor reported_;  // with stages: the last stage's local_
  std::vector<std::vector<torch::Tensor>> parts_;  // deterministic: a state per chunk
  std::int64_t total_parts_ = 0;
};

// predict()'s gathered outputs hold rank 0's outputs for every step, then
// rank 1's, ...; the dataset order is step 0 of ranks 0..N-1, then step 1, ...
torch::Tensor in_dataset_order(const torch::Tensor& all, const torch::Tensor& all_sizes, int n,
                               std::int64_t steps) {
  const auto* sz = all_sizes.data_ptr<std::int64_t>();  // host-only: allgathered host sizes
  std::vector<std::int64_t> cursor(static_cast<std::size_t>(n), 0);
  for (int r = 1; r < n; ++r) {
    std::int64_t total = 0;
    for (std::int64_t t = 0; t < steps; ++t) total += sz[(r - 1) * steps + t];
    cursor[static_cast<std::size_t>(r)] = cursor[static_cast<std::size_t>(r - 1)] + total;
  }
  std::vector<torch::Tensor> ordered;
  for (std::int64_t t = 0; t < steps; ++t) {
    for (int r = 0; r < n; ++r) {
      const std::int64_t len = sz[r * steps + t];
      ordered.push_back(all.narrow(0, cursor[static_cast<std::size_t>(r)], len));
      cursor[static_cast<std::size_t>(r)] += len;
    }
  }
  return torch::cat(ordered);
}

// evaluate() and validate(): make_callbacks(steps) gives the callback list.
template <typename MakeCallbacks>
Logs evaluate_with(const LoopContext& c, const data::Dataset& dataset,
                   const EvaluateOptions& options, MakeCallbacks make_callbacks) {
  TNT_CHECK_ARG(options.steps().value_or(0) >= 0, "evaluate(): steps=", options.steps().value_or(0),
                " is negative: give the number of batches to evaluate, or None (0) for all");
  // 0 is Keras's None: every batch.
  const std::optional<std::int64_t> cap =
      options.steps().value_or(0) > 0 ? options.steps() : std::nullopt;
  // Deterministic mode: each chunk forwarded on its own, states summed exactly.
  const std::optional<std::int64_t> chunk = c.compiled.deterministic();
  TNT_CHECK(!chunk || options.distribute_dataset(), "evaluate(): deterministic mode needs "
            "distribute_dataset(true): it gives each rank whole chunks of the global batch");
  SkippedSamples skipped(dataset);
  TNT_CHECK(!chunk || !skipped.may_skip(),
            "evaluate(): deterministic mode cannot skip bad samples (its chunks of the global ",
            "batch are fixed): read the images with OnBadSample::raise (the default) after ",
            "removing the bad files, or compile without deterministic");
  const auto dist = distribute_for(c.group, dataset, options.distribute_dataset(),
                                   options.micro_batch_size(), c.device, chunk.value_or(1));
  std::optional<SingleThreadScope> one_thread;
  std::optional<DeterministicKernelsScope> deterministic_kernels;
  if (chunk) {
    one_thread.emplace();
    deterministic_kernels.emplace(c.device);
  }
  CallbackList& cbs = make_callbacks(steps_per_epoch(dist.cardinality(), cap));
  cbs.test_begin();
  torch::NoGradGuard no_grad;
  c.net.train(false);
  EvaluationState state(c.model, c.group, c.metrics.size(), c.device, chunk, c.stage,
                        c.micro_batches);
  auto it = dist.iterate(0);
  std::int64_t step = 0;
  Logs local;
  bool local_stale = true;  // read once per batch however many callbacks ask
  const ReadLogs read_local = [&](bool) -> const Logs& {
    if (local_stale) local = c.metrics.logs(read_state(state.local()));
    local_stale = false;
    return local;
  };
  for (std::optional<data::MicroBatch> mb; (!cap || step < *cap) && (mb = it.next()); ++step) {
    cbs.test_batch_begin(step);
    state.add(*mb);
    local_stale = true;
    cbs.test_batch_end(step, read_local);  // read only for a callback that asks
  }
  const Logs logs = c.metrics.logs(state.global());
  skipped.report(c.group, "evaluate");
  cbs.test_end(logs, read_local(false));
  return logs;
}

}  // namespace

Logs evaluate(const LoopContext& context, const data::Dataset& dataset,
              const EvaluateOptions& options, Driver driver) {
  std::optional<CallbackList> own;
  return evaluate_with(context, dataset, options, [&](std::int64_t steps) -> CallbackList& {
    // One progress path: the bar is the ProgbarLogger callback, as in fit().
    std::vector<callbacks::CallbackPtr> list = options.callbacks();
    if (options.verbose() > 0) list.push_back(progress_bar(context.options, options.verbose()));
    return own.emplace(list, driver, callbacks::Params{1, steps, options.verbose()},
                       context.everyone.is_master());
  });
}

Logs validate(const LoopContext& context, const data::Dataset& dataset,
              const EvaluateOptions& options, CallbackList& fit_callbacks) {
  return evaluate_with(context, dataset, options,
                       [&](std::int64_t) -> CallbackList& { return fit_callbacks; });
}

namespace {

// Micro-batch `micro`'s outputs on this stage: the previous stage's
// outputs in, this stage's out to the next one; on the last stage, kept.
torch::Tensor predict_on_stage(const PredictContext& c, const data::MicroBatch& part, int micro) {
  data::Element element = part.tensors;
  if (!c.stage->layout().first_stage()) {
    element.at(0) = c.stage->recv_activation(micro, part.local_size);
  }
  torch::Tensor out = c.output(element);
  if (!c.stage->layout().last_stage()) c.stage->send_activation(out, micro, part.local_size);
  return out;
}

// predict()'s outputs in host memory, copied as they come without the host
// waiting for each: a GPU's into pinned memory, on the stream current at the
// copy. The pinned copies are moved into ordinary host memory every
// kPinnedBound bytes (one wait per such slice, not one per batch), so that
// page-locked memory stays bounded (torch keeps the blocks it pinned for
// reuse: the next slice takes them again); where pinning fails (the host's
// or a container's limit), the copies are ones the host waits for.
class HostOutputs {
 public:
  static constexpr std::int64_t kPinnedBound = std::int64_t{64} << 20;

  void add(const torch::Tensor& out) {
    if (!out.is_cuda()) {
      outputs_.push_back(out.contiguous());
      return;
    }
    const std::int64_t bytes = out.numel() * static_cast<std::int64_t>(out.element_size());
    if (pinned_bytes_ > 0 && pinned_bytes_ + bytes > kPinnedBound) settle();
    torch::Tensor host;
    if (!pinning_failed_) {
      try {
        host = torch::empty(out.sizes(), out.options().device(torch::kCPU).pinned_memory(true));
      } catch (const std::exception& e) {
        pinning_failed_ = true;
        ::tnt::log::warning(::tnt::detail::concat(
            "predict: its outputs could not be page-locked (", e.what(),
            "); they are copied to host memory one batch at a time, the host waiting for each"));
      }
    }
    if (!host.defined()) {
      outputs_.push_back(out.to(torch::kCPU).contiguous());  // host-sync: pinning failed
      return;
    }
    host.copy_(out, /*non_blocking=*/true);
    const c10::Stream stream = c10::impl::VirtualGuardImpl(out.device().type()).getStream(out.device());
    if (std::find(streams_.begin(), streams_.end(), stream) == streams_.end()) {
      streams_.push_back(stream);
    }
    pinned_.push_back(outputs_.size());
    outputs_.push_back(std::move(host));
    pinned_bytes_ += bytes;
  }
  std::vector<torch::Tensor>& done() {
    settle();
    return outputs_;
  }
  bool empty() const { return outputs_.empty(); }

 private:
  // Waits for the copies queued so far and moves them out of pinned memory.
  void settle() {
    for (const c10::Stream& s : streams_) s.synchronize();  // host-sync: predict returns host tensors (once per slice)
    for (const std::size_t i : pinned_) outputs_[i] = outputs_[i].clone();
    streams_.clear();
    pinned_.clear();
    pinned_bytes_ = 0;
  }

  std::vector<torch::Tensor> outputs_;
  std::vector<std::size_t> pinned_;  ///< outputs_ still in pinned memory
  std::vector<c10::Stream> streams_;  ///< where their copies were queued
  std::int64_t pinned_bytes_ = 0;
  bool pinning_failed_ = false;
};

}  // namespace

torch::Tensor predict(const PredictContext& c, const data::Dataset& dataset,
                      const PredictOptions& options, Driver driver) {
  const comm::ProcessGroup& group = c.group;
  const auto dist = distribute_for(group, dataset, true, options.micro_batch_size(), c.device,
                                   c.chunk.value_or(1));
  SkippedSamples skipped(dataset);
  CallbackList cbs(options.callbacks(), driver, {1, dist.cardinality(), 0},
                   c.everyone.is_master());
  cbs.predict_begin();
  torch::NoGradGuard no_grad;
  c.net.train(false);
  HostOutputs outputs;
  std::vector<std::int64_t> sizes;
  auto it = dist.iterate(0);
  std::int64_t step = 0;
  for (std::optional<data::MicroBatch> mb; (mb = it.next()); ++step) {
    cbs.predict_batch_begin(step);
    // Empty micro-batches run too: they give the output's trailing shape
    // (all but one without tensors: every sample dropped as bad so far).
    if (c.stage != nullptr) {  // the last stage keeps the outputs
      const auto parts = mb->local_size == 0 ? std::vector<data::MicroBatch>{}
                         : c.chunk           ? chunks_of(*mb, *c.chunk)
                                             : micro_batches_of(*mb, c.micro_batches);
      for (std::size_t i = 0; i < parts.size(); ++i) {
        const torch::Tensor out = predict_on_stage(c, parts[i], static_cast<int>(i));
        if (c.stage->layout().last_stage()) outputs.add(out);
      }
      c.stage->finish_sends();
    } else if (c.chunk && mb->local_size > 0) {
      for (const data::MicroBatch& part : chunks_of(*mb, *c.chunk)) {
        outputs.add(c.output(part.tensors));
      }
    } else if (!mb->tensors.empty()) {
      outputs.add(c.output(mb->tensors));
    }
    sizes.push_back(mb->local_size);
    cbs.predict_batch_end(step);
  }
  const bool has_outputs = c.stage == nullptr || c.stage->layout().last_stage();
  torch::Tensor result;
  if (has_outputs) {  // with stages, the last stage's replicas
    TNT_CHECK(!outputs.empty(), "predict() on an empty dataset: there is nothing to predict");
    const torch::Tensor all = group.allgatherv(torch::cat(outputs.done()));
    const torch::Tensor all_sizes = group.allgather(torch::tensor(sizes));
    result = in_dataset_order(all, all_sizes, group.size(), static_cast<std::int64_t>(sizes.size()));
  }
  skipped.report(group, "predict");
  if (c.stage != nullptr) result = c.stage->share_from_last_stage(result);
  cbs.predict_end();
  if (!c.everyone.is_master() && !options.on_all_ranks()) return torch::Tensor();
  return result;
}

}  // namespace tnt::train
