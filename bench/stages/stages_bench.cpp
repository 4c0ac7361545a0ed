// Pipeline stages' throughput against the same model on one rank, side by
// side in one job (tarantella -n P -- bench_stages): a balanced MLP of
// `layers` Linear+ReLU blocks of `width`, trained first on rank 0 alone
// (the other ranks wait), whole batches and then the same M micro-batches
// accumulated (what micro-batching alone costs: M passes over the weight
// gradients instead of one), then cut into P stages over the P ranks with M
// micro-batches. One thread per rank in all three. Prints samples per
// second, the ratios, and the ceiling that the bubble (P-1)/(M+P-1) leaves:
// P·M/(M+P-1) over the micro-batched run.
//
//   tarantella -n 2 -- build/bench/stages/bench_stages --width 1024 --layers 8 \
//       --batch 256 --micro-batches 8 --steps 20
#include <chrono>
#include <cstdio>

#include <CLI/CLI.hpp>
#include <torch/torch.h>

#include <tarantella/data/dataset.h>
#include <tarantella/keras/losses.h>
#include <tarantella/keras/optimizers.h>
#include <tarantella/model/model.h>
#include <tarantella/runtime/runtime.h>

namespace {

struct Settings {
  int width = 1024;
  int layers = 8;
  int batch = 256;
  int micro_batches = 8;
  int steps = 20;
  int warmup = 3;
};

torch::nn::Sequential mlp(const Settings& s) {
  torch::manual_seed(1);
  torch::nn::Sequential net;
  for (int i = 0; i < s.layers; ++i) {
    net->push_back(torch::nn::Linear(s.width, s.width));
    net->push_back(torch::nn::ReLU());
  }
  return net;
}

tnt::data::Dataset batches(const Settings& s, int count) {
  const auto n = static_cast<std::int64_t>(s.batch) * count;
  return tnt::data::Dataset::from_tensor_slices(
             {torch::randn({n, s.width}), torch::randn({n, s.width})})
      .batch(s.batch);
}

// Samples per second of `steps` steps after `warmup` (two fits: the first
// warms up, the second is timed).
// With `accumulate` > 1, each global batch as that many smaller batches
// whose gradients are accumulated.
double throughput(tnt::Model& model, const Settings& s, int accumulate = 1) {
  model.compile(tnt::CompileOptions()
                    .optimizer(tnt::optimizers::SGD(0.001))
                    .loss(tnt::losses::MeanSquaredError())
                    .aggregation_frequency(accumulate));
  Settings part = s;
  part.batch = s.batch / accumulate;
  model.fit(batches(part, s.warmup * accumulate), tnt::FitOptions().epochs(1).verbose(0));
  model.group().barrier();
  const auto begin = std::chrono::steady_clock::now();
  model.fit(batches(part, s.steps * accumulate), tnt::FitOptions().epochs(1).verbose(0));
  model.group().barrier();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  return static_cast<double>(s.batch) * s.steps / seconds;
}

}  // namespace

int main(int argc, char** argv) {
  Settings s;
  CLI::App app{"pipeline stages against one rank"};
  app.add_option("--width", s.width);
  app.add_option("--layers", s.layers);
  app.add_option("--batch", s.batch);
  app.add_option("--micro-batches", s.micro_batches);
  app.add_option("--steps", s.steps);
  CLI11_PARSE(app, argc, argv);
  tnt::Runtime runtime(argc, argv);
  torch::set_num_threads(1);
  const int p = tnt::get_size();
  double alone = 0;
  double micro_batched = 0;
  {
    // Rank 0 alone; the others take part only in the split.
    const tnt::comm::ProcessGroup own = tnt::world().split(tnt::get_rank() == 0 ? 0 : -1);
    if (tnt::get_rank() == 0) {
      tnt::Model model(mlp(s), own);
      alone = throughput(model, s);
      tnt::Model accumulating(mlp(s), own);
      micro_batched = throughput(accumulating, s, s.micro_batches);
    }
    tnt::world().barrier();
  }
  tnt::Model staged(mlp(s), tnt::PipelineOptions().stages(p).micro_batches(s.micro_batches));
  const double pipelined = throughput(staged, s);
  if (tnt::get_rank() == 0) {
    const double m = s.micro_batches;
    std::printf("MLP %d x %d, batch %d, %d steps, one thread per rank\n", s.layers, s.width,
                s.batch, s.steps);
    std::printf("1 rank, whole batches:          %10.1f samples/s\n", alone);
    std::printf("1 rank, %2d micro-batches:       %10.1f samples/s\n", s.micro_batches,
                micro_batched);
    std::printf("%d stages x %2d micro-batches:   %10.1f samples/s\n", p, s.micro_batches,
                pipelined);
    std::printf("speed-up over whole batches %.3f, over the same micro-batches %.3f; "
                "ceiling P*M/(M+P-1) = %.3f (bubble (P-1)/(M+P-1) = %.3f)\n",
                pipelined / alone, pipelined / micro_batched, p * m / (m + p - 1),
                (p - 1) / (m + p - 1));
  }
  return 0;
}
