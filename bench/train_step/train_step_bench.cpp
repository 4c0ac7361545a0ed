// Training-step throughput of one configuration, in samples per second of
// the whole job, for the driver (run.sh) to compare side by side:
//
//   --variant plain   a plain LibTorch loop, no tarantella, no MPI: slice the
//                     global batch from the in-memory tensors, zero_grad,
//                     forward, cross-entropy, backward, SGD step. Started
//                     directly. --grads-to-none resets .grad to undefined
//                     instead of zeroing it (autograd then hands the fresh
//                     gradient over, as tarantella does, saving two passes
//                     over the gradients).
//   --variant tnt     the same network and data through tnt::Model::fit:
//                     Dataset::from_tensor_slices({x, y}).batch(B), global
//                     batch B, started under the launcher at any rank count.
//
// Both run `epochs` passes of `steps` global batches over the same synthetic
// data; the first pass is warm-up (allocations, bucket formation) and is not
// counted. Throughput = B * steps * (epochs - 1) / time of the counted
// passes. For tnt a pass is timed from one on_epoch_begin to the next (or to
// on_train_end), so everything fit does per epoch is included.
//
// Prints one line on the master rank:  RESULT {json}
#include <dlfcn.h>

#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <ATen/Parallel.h>
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <torch/torch.h>

#include <tarantella/tarantella.h>

#include "models.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Args {
  std::string variant = "plain";
  std::string model = "lenet";
  std::int64_t batch = 256;
  std::int64_t steps = 20;
  std::int64_t epochs = 3;
  int threads = 1;  // plain only; tnt ranks take theirs from the runtime
  bool grads_to_none = false;  // plain only: reset .grad instead of zero_grad()
  double learning_rate = 0.01;
  std::uint64_t seed = 7;
  std::int64_t deterministic = 0;  // tnt only: CompileOptions().deterministic(chunk) when > 0
  std::string precision = "float32";  // tnt only: or bfloat16 (mixed precision)
  std::string optimizer = "sgd";      // tnt only: or adam
  bool shard = false;                 // tnt only: CompileOptions().shard_optimizer(true)
};

// Bytes of the tensors in the optimizer's state on this rank, counted from
// torch::optim's own state objects.
std::int64_t optimizer_state_bytes(torch::optim::Optimizer& optimizer) {
  std::int64_t bytes = 0;
  for (const auto& [key, state] : optimizer.state()) {
    std::vector<torch::Tensor> fields;
    if (auto* a = dynamic_cast<torch::optim::AdamParamState*>(state.get())) {
      fields = {a->exp_avg(), a->exp_avg_sq(), a->max_exp_avg_sq()};
    } else if (auto* g = dynamic_cast<torch::optim::SGDParamState*>(state.get())) {
      fields = {g->momentum_buffer()};
    }
    for (const auto& f : fields) {
      if (f.defined()) bytes += f.numel() * static_cast<std::int64_t>(f.element_size());
    }
  }
  return bytes;
}

// Peak resident memory of this process (VmHWM), in bytes; 0 if unknown.
std::int64_t peak_rss_bytes() {
  std::FILE* f = std::fopen("/proc/self/status", "r");
  if (f == nullptr) return 0;
  char line[256];
  std::int64_t kb = 0;
  while (std::fgets(line, sizeof line, f) != nullptr) {
    if (std::sscanf(line, "VmHWM: %ld kB", &kb) == 1) break;
  }
  std::fclose(f);
  return kb * 1024;
}

// The library that provides sgemm_ in this process (OpenBLAS expected).
std::string blas_library() {
  void* sgemm = dlsym(RTLD_DEFAULT, "sgemm_");
  Dl_info where{};
  if (sgemm == nullptr || dladdr(sgemm, &where) == 0 || where.dli_fname == nullptr) {
    return "unknown";
  }
  char resolved[PATH_MAX];
  return realpath(where.dli_fname, resolved) ? resolved : where.dli_fname;
}

void print_result(const Args& a, int ranks, const std::vector<double>& epoch_s,
                  const torch::Tensor& x, const torch::Tensor& y, std::int64_t state_bytes = 0,
                  std::int64_t rss_bytes = 0) {
  double counted = 0;
  for (std::size_t e = 1; e < epoch_s.size(); ++e) counted += epoch_s[e];
  const double samples = static_cast<double>(a.batch * a.steps) * (epoch_s.size() - 1);
  fmt::print(
      "RESULT {{\"variant\": \"{}\", \"model\": \"{}\", \"ranks\": {}, \"threads\": {}, "
      "\"deterministic\": {}, \"precision\": \"{}\", \"optimizer\": \"{}\", \"shard\": {}, "
      "\"optimizer_state_bytes\": {}, \"peak_rss_bytes\": {}, "
      "\"samples_per_s\": {:.3f}, \"epoch_s\": [{:.4f}], \"checksum\": [{:.6f}, {}], "
      "\"blas\": \"{}\"}}\n",
      a.variant, a.model, ranks, at::get_num_threads(), a.deterministic, a.precision,
      a.optimizer, a.shard ? "true" : "false", state_bytes, rss_bytes, samples / counted,
      fmt::join(epoch_s, ", "), x.sum().item<double>(), y.sum().item<std::int64_t>(),
      blas_library());
  std::fflush(stdout);
}

// (a)/(e): what a user writes without tarantella.
template <typename Net>
void run_plain(const Args& a) {
  at::set_num_threads(a.threads);
  const auto [x, y] = tnt_bench::synthetic_data(a.model, a.batch * a.steps, a.seed);
  torch::manual_seed(a.seed + 1);
  Net net;
  net->train();
  torch::optim::SGD optimizer(net->parameters(), torch::optim::SGDOptions(a.learning_rate));
  std::vector<double> epoch_s;
  for (std::int64_t epoch = 0; epoch < a.epochs; ++epoch) {
    const auto start = Clock::now();
    for (std::int64_t step = 0; step < a.steps; ++step) {
      const torch::Tensor xb = x.narrow(0, step * a.batch, a.batch);
      const torch::Tensor yb = y.narrow(0, step * a.batch, a.batch);
      if (a.grads_to_none) {
        for (auto& p : net->parameters()) p.mutable_grad().reset();
      } else {
        optimizer.zero_grad();
      }
      const torch::Tensor loss = torch::nn::functional::cross_entropy(net->forward(xb), yb);
      loss.backward();
      optimizer.step();
    }
    epoch_s.push_back(std::chrono::duration<double>(Clock::now() - start).count());
  }
  print_result(a, 1, epoch_s, x, y);
}

// Wall time of every epoch, from its on_epoch_begin to the next one's.
struct EpochTimer : tnt::callbacks::Callback {
  std::vector<Clock::time_point> marks;
  void on_epoch_begin(std::int64_t, const tnt::callbacks::Logs&) override {
    marks.push_back(Clock::now());
  }
  void on_train_end(const tnt::callbacks::Logs&) override { marks.push_back(Clock::now()); }
  std::vector<double> epoch_seconds() const {
    std::vector<double> s;
    for (std::size_t i = 1; i < marks.size(); ++i) {
      s.push_back(std::chrono::duration<double>(marks[i] - marks[i - 1]).count());
    }
    return s;
  }
};

// (b)/(c): the same work through tnt::Model::fit.
template <typename Net>
void run_tnt(const Args& a) {
  const auto [x, y] = tnt_bench::synthetic_data(a.model, a.batch * a.steps, a.seed);
  const auto train = tnt::data::Dataset::from_tensor_slices({x, y}).batch(a.batch);
  torch::manual_seed(a.seed + 1);
  tnt::Model model{Net()};
  tnt::CompileOptions options;
  options
      .optimizer(a.optimizer == "adam" ? tnt::optimizers::Adam(a.learning_rate)
                                       : tnt::optimizers::SGD(a.learning_rate))
      .loss(tnt::losses::SparseCategoricalCrossentropy())
      .shard_optimizer(a.shard);
  if (a.deterministic > 0) options.deterministic(a.deterministic);
  if (a.precision == "bfloat16") options.mixed_precision(tnt::MixedPrecision::BFloat16);
  model.compile(options);
  auto timer = std::make_shared<EpochTimer>();
  model.fit(train, tnt::FitOptions()
                       .epochs(a.epochs)
                       .steps_per_epoch(a.steps)
                       .verbose(0)
                       .callbacks({timer}));
  // The largest rank's optimizer state and peak memory.
  torch::Tensor memory = torch::tensor({optimizer_state_bytes(model.optimizer()), peak_rss_bytes()});
  tnt::comm::allreduce(memory, tnt::comm::ReduceOp::Max);
  if (tnt::is_master_rank()) {
    print_result(a, tnt::get_size(), timer->epoch_seconds(), x, y, memory[0].item<std::int64_t>(),
                 memory[1].item<std::int64_t>());
  }
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  CLI::App app{"Training-step throughput of one configuration (see run.sh)"};
  app.add_option("--variant", a.variant, "plain or tnt")
      ->check(CLI::IsMember({"plain", "tnt"}));
  app.add_option("--model", a.model, "lenet or mlp")->check(CLI::IsMember({"lenet", "mlp"}));
  app.add_option("--batch-size", a.batch, "global batch size")->check(CLI::PositiveNumber);
  app.add_option("--steps", a.steps, "global batches per epoch")->check(CLI::PositiveNumber);
  app.add_option("--epochs", a.epochs, "epochs, the first one not counted")
      ->check(CLI::Range(2, 1000));
  app.add_option("--threads", a.threads, "intra-op threads (plain)")->check(CLI::PositiveNumber);
  app.add_option("--seed", a.seed, "seed of data and weights");
  app.add_option("--learning-rate", a.learning_rate, "learning rate")->check(CLI::PositiveNumber);
  app.add_option("--deterministic", a.deterministic,
                 "tnt: deterministic mode with chunks of this many samples (0: normal mode)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--precision", a.precision, "tnt: float32, or bfloat16 (mixed precision)")
      ->check(CLI::IsMember({"float32", "bfloat16"}));
  app.add_option("--optimizer", a.optimizer, "tnt: sgd or adam")
      ->check(CLI::IsMember({"sgd", "adam"}));
  app.add_flag("--shard", a.shard, "tnt: shard the optimizer (ZeRO stage 1)");
  app.add_flag("--grads-to-none", a.grads_to_none,
               "plain: reset .grad to undefined each step instead of optimizer.zero_grad()");
  CLI11_PARSE(app, argc, argv);

  const bool lenet = a.model == "lenet";
  if (a.variant == "plain") {
    lenet ? run_plain<tnt_bench::LeNet5>(a) : run_plain<tnt_bench::Mlp>(a);
    return 0;
  }
  tnt::Runtime runtime(argc, argv);
  lenet ? run_tnt<tnt_bench::LeNet5>(a) : run_tnt<tnt_bench::Mlp>(a);
  return 0;
}
