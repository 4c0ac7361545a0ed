// Input throughput of the tnt::data pipeline against a plain loop that
// indexes the tensors, side by side in one run, on Fashion-MNIST train:
//
//   pipeline: from_tensor_slices({x, y}) -> shuffle(60000) -> batch(64) -> prefetch(2)
//   plain:    perm = randperm(60000); per batch x.index_select(perm[b]), y.index_select(perm[b])
//
// Both produce the same kind of shuffled batches of 64 (the last one short).
// Two consumers: one that does nothing with a batch (the pipeline's overhead
// at its most visible; the headline ratio), and one that does some work per
// batch (a [64, 784] x [784, 64] matmul, standing in for a training step),
// where prefetch overlaps input with that work. Epochs of the variants
// alternate so that machine noise hits all alike; each figure is the median.
//
// Run: build/bench/pipeline/bench_pipeline [--epochs 7] [--dir /usr/share/datasets/fashion-mnist]
#include <algorithm>
#include <chrono>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <torch/torch.h>

#include <tarantella/tarantella.h>

namespace {

using Clock = std::chrono::steady_clock;
using Consumer = std::function<void(const torch::Tensor&)>;
constexpr std::int64_t kBatch = 64;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double rate(std::int64_t samples, Clock::time_point start) {
  return static_cast<double>(samples) / std::chrono::duration<double>(Clock::now() - start).count();
}

// Samples per second of one epoch of the plain loop.
double plain_epoch(const torch::Tensor& x, const torch::Tensor& y, std::int64_t epoch,
                   const Consumer& consume) {
  const auto start = Clock::now();
  const std::int64_t n = x.size(0);
  torch::manual_seed(static_cast<std::uint64_t>(epoch));
  const torch::Tensor perm = torch::randperm(n, torch::kInt64);
  std::int64_t seen = 0;
  for (std::int64_t first = 0; first < n; first += kBatch) {
    const torch::Tensor idx = perm.narrow(0, first, std::min(kBatch, n - first));
    const torch::Tensor xb = x.index_select(0, idx);
    const torch::Tensor yb = y.index_select(0, idx);
    consume(xb);
    seen += yb.size(0);
  }
  return rate(seen, start);
}

// Samples per second of one epoch of a pipeline (including starting and
// stopping its prefetch thread).
double pipeline_epoch(const tnt::data::Dataset& ds, std::int64_t epoch, const Consumer& consume) {
  const auto start = Clock::now();
  std::int64_t seen = 0;
  auto it = ds.iterate(epoch);
  while (auto batch = it.next()) {
    consume((*batch)[0]);
    seen += (*batch)[1].size(0);
  }
  return rate(seen, start);
}

struct Figures {
  double plain, pipeline, no_prefetch;
};

Figures measure(const torch::Tensor& x, const torch::Tensor& y, const tnt::data::Dataset& batched,
                const tnt::data::Dataset& prefetched, int epochs, const Consumer& consume) {
  pipeline_epoch(prefetched, 1000, consume);  // warm-up
  plain_epoch(x, y, 1000, consume);
  std::vector<double> plain, pipeline, no_prefetch;
  for (int e = 0; e < epochs; ++e) {
    plain.push_back(plain_epoch(x, y, e, consume));
    pipeline.push_back(pipeline_epoch(prefetched, e, consume));
    no_prefetch.push_back(pipeline_epoch(batched, e, consume));
  }
  return {median(plain), median(pipeline), median(no_prefetch)};
}

void report(const char* consumer, const Figures& f) {
  fmt::print("consumer: {}\n", consumer);
  fmt::print("  {:<40} {:>10.0f} samples/s\n", "plain loop (randperm + index_select)", f.plain);
  fmt::print("  {:<40} {:>10.0f} samples/s\n", "tnt::data pipeline", f.pipeline);
  fmt::print("  {:<40} {:>10.0f} samples/s\n", "tnt::data pipeline without prefetch",
             f.no_prefetch);
  fmt::print("  ratio pipeline / plain loop: {:.2f}   (without prefetch: {:.2f})\n",
             f.pipeline / f.plain, f.no_prefetch / f.plain);
}

}  // namespace

int main(int argc, char** argv) {
  int epochs = 7;
  std::string dir = tnt::data::datasets::kFashionMnistDir;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--epochs") == 0) epochs = std::max(1, std::atoi(argv[i + 1]));
    if (std::strcmp(argv[i], "--dir") == 0) dir = argv[i + 1];
  }
  // The whole split in one gather: x float32 [60000, 1, 28, 28], y int64.
  const auto train = tnt::data::datasets::fashion_mnist("train", dir);
  const auto all = *train.batch(train.cardinality()).iterate(0).next();
  const torch::Tensor x = all[0], y = all[1];
  const auto batched =
      tnt::data::Dataset::from_tensor_slices({x, y}).shuffle(x.size(0), 1).batch(kBatch);
  const auto prefetched = batched.prefetch(2);

  const torch::Tensor w = torch::randn({784, 64});
  const Consumer nothing = [](const torch::Tensor&) {};
  const Consumer matmul = [&w](const torch::Tensor& xb) {
    const torch::Tensor out = torch::mm(xb.reshape({xb.size(0), 784}), w);
    (void)out;
  };

  fmt::print("Fashion-MNIST train: {} samples, batch {}, {} epochs per variant, torch threads {}\n",
             x.size(0), kBatch, epochs, torch::get_num_threads());
  fmt::print("pipeline: {}\n", prefetched.describe());
  report("none (input only)", measure(x, y, batched, prefetched, epochs, nothing));
  report("a [64,784]x[784,64] matmul per batch", measure(x, y, batched, prefetched, epochs, matmul));
  return 0;
}
