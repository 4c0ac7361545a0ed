// Where the time of one training step goes: a diagnostic companion of
// train_step_bench.cpp, for finding overhead rather than reporting
// throughput. It runs the step of tnt::Model::fit (src/model/fit.cpp) spelled
// out with the same public pieces — data::distribute for the micro-batch,
// dp::GradientSynchronizer for the fused, overlapped allreduce — with a
// clock between the phases:
//
//   data      next micro-batch from the distributed pipeline
//   forward   forward pass and cross-entropy loss
//   state     the loss state fit() sends along (loss * n, n)
//   backward  loss.backward(); hooks copy gradients into buckets and enqueue
//             each bucket's allreduce when it is complete
//   finish    GradientSynchronizer::finish(): the rest of the buckets, wait
//             for all, point .grad at the reduced buckets
//   optimizer SGD step
//
// and, per bucket, when its allreduce started and how long it ran, relative
// to the start of backward (overlap shows as a start before backward ends).
// `--loop plain` times the plain LibTorch step instead (narrow, zero_grad,
// forward, backward, SGD step) for comparison. `--loop allreduce` times,
// with no computation running, the allreduce of the model's gradient
// buckets as they are (one call per bucket) against the same bytes sent in
// 4 MiB pieces: what chunking large buckets would save. Medians over the
// timed steps, printed by every rank:
//
//   tarantella -n 2 --output-on-all-devices -- bench_train_step_breakdown --model mlp
#include <algorithm>
#include <chrono>
#include <map>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <torch/torch.h>

#include <tarantella/dp/state_sync.h>
#include <tarantella/tarantella.h>

#include "models.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Args {
  std::string loop = "tnt";
  std::string model = "mlp";
  std::int64_t batch = 256;
  std::int64_t steps = 8;
  std::int64_t warmup = 2;
  std::uint64_t seed = 7;
};

double ms(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

// Phase name -> one duration (ms) per timed step, in the order first seen.
struct Phases {
  std::vector<std::string> order;
  std::map<std::string, std::vector<double>> ms_per_step;
  void add(const std::string& name, double value) {
    if (!ms_per_step.count(name)) order.push_back(name);
    ms_per_step[name].push_back(value);
  }
  std::string report() const {
    std::string out;
    double total = 0;
    for (const auto& name : order) {
      const double m = median(ms_per_step.at(name));
      total += m;
      out += fmt::format(" {} {:.2f}", name, m);
    }
    return out + fmt::format(" | sum of medians {:.2f} ms", total);
  }
};

template <typename Net>
Phases plain_loop(const Args& a, const torch::Tensor& x, const torch::Tensor& y) {
  Net net;
  torch::optim::SGD optimizer(net->parameters(), torch::optim::SGDOptions(0.01));
  Phases phases;
  for (std::int64_t step = 0; step < a.warmup + a.steps; ++step) {
    const auto t0 = Clock::now();
    const torch::Tensor xb = x.narrow(0, step * a.batch, a.batch);
    const torch::Tensor yb = y.narrow(0, step * a.batch, a.batch);
    optimizer.zero_grad();
    const auto t1 = Clock::now();
    const torch::Tensor loss = torch::nn::functional::cross_entropy(net->forward(xb), yb);
    const auto t2 = Clock::now();
    loss.backward();
    const auto t3 = Clock::now();
    optimizer.step();
    const auto t4 = Clock::now();
    if (step < a.warmup) continue;
    phases.add("data+zero_grad", ms(t0, t1));
    phases.add("forward", ms(t1, t2));
    phases.add("backward", ms(t2, t3));
    phases.add("optimizer", ms(t3, t4));
    phases.add("step", ms(t0, t4));
  }
  return phases;
}

template <typename Net>
Phases tnt_loop(const Args& a, const torch::Tensor& x, const torch::Tensor& y) {
  const auto dist =
      tnt::data::distribute(tnt::data::Dataset::from_tensor_slices({x, y}).batch(a.batch));
  Net net;
  std::vector<torch::Tensor> params = net->parameters();
  tnt::dp::broadcast_tensors(tnt::world(), params, 0);
  torch::optim::SGD optimizer(params, torch::optim::SGDOptions(0.01));
  tnt::dp::GradientSynchronizer sync(tnt::world(), params, tnt::dp::SyncOptions().extras_numel(2));
  Phases phases;
  auto it = dist.iterate(0);
  for (std::int64_t step = 0; step < a.warmup + a.steps; ++step) {
    const auto t0 = Clock::now();
    const std::optional<tnt::data::MicroBatch> mb = it.next();
    const auto t1 = Clock::now();
    const torch::Tensor loss =
        torch::nn::functional::cross_entropy(net->forward(mb->tensors[0]), mb->tensors[1]);
    const auto t2 = Clock::now();
    const torch::Tensor state = torch::stack(
        {loss.detach().to(torch::kFloat64) * static_cast<double>(mb->local_size),
         torch::tensor(static_cast<double>(mb->local_size), torch::kFloat64)});
    const auto t3 = Clock::now();
    sync.begin_step(static_cast<double>(mb->local_size) / static_cast<double>(mb->global_size),
                    /*reduce=*/true, state);
    loss.backward();
    const auto t4 = Clock::now();
    sync.finish();
    const auto t5 = Clock::now();
    optimizer.step();
    const auto t6 = Clock::now();
    if (step < a.warmup) continue;
    phases.add("data", ms(t0, t1));
    phases.add("forward", ms(t1, t2));
    phases.add("state", ms(t2, t3));
    phases.add("backward", ms(t3, t4));
    phases.add("finish(wait)", ms(t4, t5));
    phases.add("optimizer", ms(t5, t6));
    phases.add("step", ms(t0, t6));
    const auto& handles = sync.last_handles();
    for (std::size_t b = 0; b < handles.size(); ++b) {
      const auto started = handles[b].started();
      const auto finished = handles[b].finished();
      if (!started || !finished) continue;
      phases.add(fmt::format("[bucket{} start-after-bwd-begin", b), ms(t3, *started));
      phases.add(fmt::format("bucket{} run]", b), ms(*started, *finished));
    }
  }
  return phases;
}

// One allreduce per bucket, as GradientSynchronizer sends them, against the
// same buffers cut into 4 MiB pieces (all enqueued, then waited for).
template <typename Net>
Phases allreduce_loop(const Args& a) {
  Net net;
  const std::vector<torch::Tensor> params = net->parameters();
  const auto buckets = tnt::dp::plan_buckets(params, tnt::config().fusion_threshold_bytes);
  std::vector<torch::Tensor> buffers;
  for (const auto& b : buckets) buffers.push_back(torch::ones({b.numel}));
  constexpr std::int64_t kPiece = (4 << 20) / sizeof(float);
  Phases phases;
  for (std::int64_t step = 0; step < a.warmup + a.steps; ++step) {
    tnt::comm::barrier();
    const auto t0 = Clock::now();
    for (auto& buffer : buffers) tnt::comm::allreduce(buffer);
    const auto t1 = Clock::now();
    tnt::comm::barrier();
    const auto t2 = Clock::now();
    std::vector<tnt::comm::Handle> handles;
    for (auto& buffer : buffers) {
      for (std::int64_t at = 0; at < buffer.numel(); at += kPiece) {
        handles.push_back(tnt::comm::allreduce_async(
            buffer.narrow(0, at, std::min(kPiece, buffer.numel() - at))));
      }
    }
    for (auto& h : handles) h.wait();
    const auto t3 = Clock::now();
    if (step < a.warmup) continue;
    phases.add(fmt::format("{}-buckets-whole", buffers.size()), ms(t0, t1));
    phases.add(fmt::format("same-in-{}-pieces-of-4MiB", handles.size()), ms(t2, t3));
  }
  return phases;
}

template <typename Net>
void run(const Args& a) {
  const std::int64_t n = a.batch * (a.warmup + a.steps);
  const auto [x, y] = tnt_bench::synthetic_data(a.model, n, a.seed);
  torch::manual_seed(a.seed + 1);
  const Phases phases = a.loop == "plain"       ? plain_loop<Net>(a, x, y)
                        : a.loop == "allreduce" ? allreduce_loop<Net>(a)
                                                : tnt_loop<Net>(a, x, y);
  fmt::print("rank {} of {}: {} {} (ms, median of {} steps):{}\n", tnt::get_rank(),
             tnt::get_size(), a.loop, a.model, a.steps, phases.report());
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  tnt::Runtime runtime(argc, argv);
  Args a;
  CLI::App app{"Per-phase time of one training step (see the file's first comment)"};
  app.add_option("--loop", a.loop, "tnt, plain or allreduce")
      ->check(CLI::IsMember({"tnt", "plain", "allreduce"}));
  app.add_option("--model", a.model, "lenet or mlp")->check(CLI::IsMember({"lenet", "mlp"}));
  app.add_option("--batch-size", a.batch, "global batch size")->check(CLI::PositiveNumber);
  app.add_option("--steps", a.steps, "timed steps")->check(CLI::PositiveNumber);
  app.add_option("--warmup", a.warmup, "untimed steps first")->check(CLI::NonNegativeNumber);
  app.add_option("--seed", a.seed, "seed of data and weights");
  CLI11_PARSE(app, argc, argv);
  a.model == "lenet" ? run<tnt_bench::LeNet5>(a) : run<tnt_bench::Mlp>(a);
  return 0;
}
