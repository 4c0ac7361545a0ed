// evaluate() and predict(): each rank runs its micro-batches of every
// global batch. evaluate() sums the loss/metric state locally and reduces it
// once at the end (exact global metrics, one collective); predict() gathers
// the outputs once at the end and puts them back into dataset order.
#include <tarantella/callbacks/builtins.h>
#include <tarantella/data/dataset.h>
#include <tarantella/data/distribute.h>
#include <tarantella/base/error.h>
#include <tarantella/runtime/runtime.h>

#include "model/model_impl.h"
#include "callbacks/callback_list.h"
#include "dp/exact_sum.h"
#include "train/deterministic_step.h"
#include "train/train_step.h"

namespace tnt {
namespace {

data::DistributedDataset distribute_for(const comm::ProcessGroup& group,
                                        const data::Dataset& dataset, bool enabled,
                                        const std::optional<std::int64_t>& micro_batch,
                                        std::int64_t granularity = 1) {
  data::DistributeOptions d;
  d.group(group).enabled(enabled).granularity(granularity);
  if (micro_batch) d.micro_batch_size(*micro_batch);
  return data::distribute(dataset, d);
}

// What a deterministic evaluation needs of the model (forward, target, loss, state).
train::StepModel step_model(Model::Impl& s) {
  return {[&s](const data::Element& e) { return s.forward(s.inputs_of(e)); },
          [&s](const data::Element& e) { return s.target_of(e); },
          [&s](const torch::Tensor& output, const torch::Tensor& target) {
            return s.options->loss()(output, target);
          },
          [&s](const torch::Tensor& output, const torch::Tensor& target, const torch::Tensor& loss,
               std::int64_t samples) { return s.state_of(output, target, loss, samples); }};
}

}  // namespace

std::map<std::string, double> Model::evaluate(const data::Dataset& dataset,
                                              EvaluateOptions options) {
  Impl& s = *impl_;
  s.require_compiled("evaluate()");
  // Deterministic mode: each chunk forwarded on its own, states summed exactly.
  const std::optional<std::int64_t> chunk = s.options->deterministic();
  TNT_CHECK(!chunk || options.distribute_dataset(), "evaluate(): deterministic mode needs "
            "distribute_dataset(true): it gives each rank whole chunks of the global batch");
  const auto dist = distribute_for(s.group, dataset, options.distribute_dataset(),
                                   options.micro_batch_size(), chunk.value_or(1));
  std::optional<train::SingleThreadScope> one_thread;
  if (chunk) one_thread.emplace();
  const train::StepModel model = step_model(s);
  std::vector<std::vector<torch::Tensor>> parts;  // deterministic: a state per chunk
  std::int64_t total_parts = 0;
  // One progress path: the bar is the ProgbarLogger callback, as in fit().
  std::vector<callbacks::CallbackPtr> list = options.callbacks();
  if (options.verbose() > 0) {
    list.push_back(std::make_shared<callbacks::ProgbarLogger>(options.verbose()));
  }
  callbacks::CallbackList cbs(list, this, {1, dist.cardinality(), options.verbose()},
                              s.group.is_master());
  cbs.test_begin();
  torch::NoGradGuard no_grad;
  s.net->train(false);
  std::vector<double> state(static_cast<std::size_t>(s.state_size()), 0.0);
  auto it = dist.iterate(0);
  std::int64_t step = 0;
  for (std::optional<data::MicroBatch> mb; (mb = it.next()); ++step) {
    cbs.test_batch_begin(step);
    if (chunk) {
      const std::size_t before = parts.size();
      train::evaluate_chunks(model, *mb, *chunk, parts);
      for (std::size_t j = before; j < parts.size(); ++j) train::accumulate(state, parts[j][0]);
      total_parts += train::chunk_count(mb->global_size, *chunk);
    } else if (mb->local_size > 0) {
      const torch::Tensor output = s.forward(s.inputs_of(mb->tensors));
      const torch::Tensor target = s.target_of(mb->tensors);
      train::accumulate(state, s.state_of(output, target, s.options->loss()(output, target),
                                   mb->local_size));
    }
    cbs.test_batch_end(step, s.logs_of(state));
  }
  std::vector<double> global;
  if (chunk) {
    const torch::Tensor like = torch::zeros({static_cast<std::int64_t>(state.size())}, torch::kFloat64);
    const torch::Tensor sum = dp::exact_sum(s.group, parts, {like}, total_parts).front();
    global.assign(sum.data_ptr<double>(), sum.data_ptr<double>() + sum.numel());
  } else {
    global = allreduce_state(s.group, state);
  }
  const Logs logs = s.logs_of(global);
  cbs.test_end(logs, s.logs_of(state));
  return logs;
}

torch::Tensor Model::predict(const data::Dataset& dataset, PredictOptions options) {
  Impl& s = *impl_;
  const auto dist = distribute_for(s.group, dataset, true, options.micro_batch_size());
  callbacks::CallbackList cbs(options.callbacks(), this, {1, dist.cardinality(), 0},
                              s.group.is_master());
  cbs.predict_begin();
  torch::NoGradGuard no_grad;
  s.net->train(false);
  std::vector<torch::Tensor> outputs;
  std::vector<std::int64_t> sizes;
  auto it = dist.iterate(0);
  std::int64_t step = 0;
  for (std::optional<data::MicroBatch> mb; (mb = it.next()); ++step) {
    cbs.predict_batch_begin(step);
    // Empty micro-batches run too: they give the output's trailing shape.
    outputs.push_back(s.run(s.inputs_of(mb->tensors)).cpu().contiguous());
    sizes.push_back(mb->local_size);
    cbs.predict_batch_end(step);
  }
  TNT_CHECK(!outputs.empty(), "predict() on an empty dataset: there is nothing to predict");
  const torch::Tensor mine = torch::cat(outputs);
  const torch::Tensor all = s.group.allgatherv(mine);
  const torch::Tensor all_sizes = s.group.allgather(torch::tensor(sizes));
  cbs.predict_end();
  if (!s.group.is_master() && !options.on_all_ranks()) return torch::Tensor();

  // `all` holds rank 0's outputs for every step, then rank 1's, ...; the
  // dataset order is step 0 of ranks 0..N-1, then step 1, ...
  const int n = s.group.size();
  const auto steps = static_cast<std::int64_t>(sizes.size());
  const auto* sz = all_sizes.data_ptr<std::int64_t>();
  std::vector<std::int64_t> rank_start(static_cast<std::size_t>(n), 0);
  for (int r = 1; r < n; ++r) {
    std::int64_t total = 0;
    for (std::int64_t t = 0; t < steps; ++t) total += sz[(r - 1) * steps + t];
    rank_start[static_cast<std::size_t>(r)] = rank_start[static_cast<std::size_t>(r - 1)] + total;
  }
  std::vector<torch::Tensor> ordered;
  std::vector<std::int64_t> cursor = rank_start;
  for (std::int64_t t = 0; t < steps; ++t) {
    for (int r = 0; r < n; ++r) {
      const std::int64_t len = sz[r * steps + t];
      ordered.push_back(all.narrow(0, cursor[static_cast<std::size_t>(r)], len));
      cursor[static_cast<std::size_t>(r)] += len;
    }
  }
  return torch::cat(ordered);
}

}  // namespace tnt
