// Keep-your-loop vs fit: the same network, data, batch and optimizer trained
// by (a) tnt::Model::fit and (b) a hand-written LibTorch loop over
// tnt::data::make_data_loader with a tnt::DistributedOptimizer, alternating
// in one process, so the ratio (b)/(a) is taken side by side. Run it under
// the launcher at any rank count:
//
//   tarantella -n 2 -- build/bench/byop/bench_byop [--model lenet|mlp] [--rounds 7] [--steps 20]
//
// Prints per-round samples/s of both routes and the median ratio.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include <torch/torch.h>

#include <tarantella/tarantella.h>

#include "models.h"

namespace {

using Clock = std::chrono::steady_clock;

// In-memory samples as a torch::data dataset whose batches are row gathers
// (what a performance-aware user writes; Stack<> of single samples is slower).
struct Rows : torch::data::datasets::BatchDataset<Rows, torch::data::Example<>> {
  Rows(torch::Tensor x, torch::Tensor y) : x(std::move(x)), y(std::move(y)) {}
  torch::data::Example<> get_batch(c10::ArrayRef<size_t> indices) override {
    std::vector<std::int64_t> rows(indices.begin(), indices.end());
    const torch::Tensor idx = torch::tensor(rows, torch::kLong);
    return {x.index_select(0, idx), y.index_select(0, idx)};
  }
  torch::optional<size_t> size() const override { return static_cast<size_t>(x.size(0)); }
  torch::Tensor x, y;
};

double fit_route(tnt::Model& model, const tnt::data::Dataset& train, std::int64_t steps,
                 std::int64_t batch) {
  const auto start = Clock::now();
  model.fit(train, tnt::FitOptions().epochs(1).steps_per_epoch(steps).verbose(0));
  tnt::world().barrier();
  return static_cast<double>(steps * batch) /
         std::chrono::duration<double>(Clock::now() - start).count();
}

template <typename Net, typename Loader>
double loop_route(Net& net, Loader& loader, tnt::DistributedOptimizer& optimizer,
                  std::int64_t steps, std::int64_t batch) {
  const auto start = Clock::now();
  std::int64_t done = 0;
  for (auto& b : loader) {
    optimizer.zero_grad();
    torch::nn::functional::cross_entropy(net->forward(b.data), b.target).backward();
    optimizer.step();
    if (++done == steps) break;
  }
  tnt::world().barrier();
  return static_cast<double>(steps * batch) /
         std::chrono::duration<double>(Clock::now() - start).count();
}

template <typename Net>
void run(const std::string& name, int rounds, std::int64_t steps) {
  const std::int64_t batch = 256;
  auto [x, y] = tnt_bench::synthetic_data(name, batch * steps, 42);
  const auto train = tnt::data::Dataset::from_tensor_slices({x, y}).batch(batch);
  torch::manual_seed(1);
  tnt::Model model{Net()};
  model.compile(tnt::CompileOptions()
                    .optimizer(tnt::optimizers::SGD(0.01))
                    .loss(tnt::losses::SparseCategoricalCrossentropy()));
  torch::manual_seed(1);
  Net net;
  auto loader = tnt::data::make_data_loader(Rows(x, y), batch);
  tnt::DistributedOptimizer optimizer(
      torch::optim::SGD(net->parameters(), torch::optim::SGDOptions(0.01)), loader->share());
  // Warm-up: one pass of each.
  fit_route(model, train, steps, batch);
  loop_route(net, *loader, optimizer, steps, batch);
  std::vector<double> ratios;
  if (tnt::is_master_rank()) {
    std::printf("model %s, %d ranks, global batch %lld, %lld steps per measurement\n",
                name.c_str(), tnt::get_size(), static_cast<long long>(batch),
                static_cast<long long>(steps));
    std::printf("| round | fit samples/s | own loop samples/s | loop / fit |\n|---:|---:|---:|---:|\n");
  }
  for (int r = 0; r < rounds; ++r) {
    double fit = 0, loop = 0;
    if (r % 2 == 0) {  // alternate the order
      fit = fit_route(model, train, steps, batch);
      loop = loop_route(net, *loader, optimizer, steps, batch);
    } else {
      loop = loop_route(net, *loader, optimizer, steps, batch);
      fit = fit_route(model, train, steps, batch);
    }
    ratios.push_back(loop / fit);
    if (tnt::is_master_rank()) {
      std::printf("| %d | %.1f | %.1f | %.3f |\n", r + 1, fit, loop, loop / fit);
    }
  }
  std::sort(ratios.begin(), ratios.end());
  if (tnt::is_master_rank()) {
    std::printf("median loop / fit: %.3f (min %.3f, max %.3f)\n", ratios[ratios.size() / 2],
                ratios.front(), ratios.back());
  }
}

}  // namespace

int main(int argc, char** argv) {
  tnt::Runtime runtime(argc, argv);
  std::string model = "lenet";
  int rounds = 7;
  std::int64_t steps = 20;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--model") model = argv[i + 1];
    else if (flag == "--rounds") rounds = std::stoi(argv[i + 1]);
    else if (flag == "--steps") steps = std::stoll(argv[i + 1]);
    else throw tnt::Error("bench_byop: unknown flag " + flag + ": use --model, --rounds, --steps");
  }
  if (model == "lenet") {
    run<tnt_bench::LeNet5>(model, rounds, steps);
  } else if (model == "mlp") {
    run<tnt_bench::Mlp>(model, rounds, steps);
  } else {
    throw tnt::Error("bench_byop: --model " + model + " is not lenet or mlp");
  }
}
