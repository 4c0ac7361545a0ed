// Step time of one configuration of the scaling benchmark (bench/scaling/
// run.sh starts it on the simulated hosts of bench/cluster):
//
//   --variant plain   a plain LibTorch loop at the given batch, no MPI: what
//                     one host computes when it exchanges nothing. Run on
//                     each host at the micro-batch size, it is the floor of a
//                     data-parallel step ("compute only").
//   --variant tnt     tnt::Model::fit at the given GLOBAL batch, started by
//                     `tarantella --hostfile`; fusion, overlap and
//                     auto-tuning come from the launcher's flags and TNT_*;
//                     --compression float16/bfloat16 compresses gradients.
//
// The GPU check (scripts/device-check.sh) runs the tnt variant on one GPU
// the way bench/gpu/resnet_overhead.py runs Python's: ResNet-18 with
// --image-size 224 --classes 1000 --momentum 0.9 --batch-size 128, fp32 and
// --mixed-precision float16, inputs from host memory through the dataset
// pipeline.
//
// Models: the 784-4096-4096-10 MLP of bench/train_step (20.0M parameters)
// and ResNet-18 on 32x32 images (11.2M, resnet18.h). Data are synthetic, a
// few distinct batches held in memory and repeated. SGD, cross-entropy.
//
// Prints on the master rank one line:  RESULT {json}  with the wall time of
// every step (from one step's start to the next one's), so the driver can drop
// warm-up and auto-tuning steps itself.
#include <ATen/Parallel.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <tarantella/tarantella.h>
#include <torch/torch.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <string>
#include <type_traits>
#include <vector>

#include "models.h"  // bench/train_step: the MLP
#include "resnet18.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Args {
  std::string variant = "plain";
  std::string model = "mlp";
  std::string compression = "none";
  std::string mixed_precision = "none";  // tnt only
  std::int64_t image_size = 32;          // ResNet-18's inputs
  std::int64_t classes = 10;             // ResNet-18's outputs
  double momentum = 0;
  std::int64_t batch = 256;
  std::int64_t steps = 8;
  std::int64_t distinct_batches = 4;
  int threads = 1;  // plain only; tnt ranks take theirs from the launcher
  std::uint64_t seed = 7;
  std::int64_t warmup = 0;  // tnt on a GPU: steps before the synchronised window
};

// Inputs [n, 784] (MLP) or [n, 3, 32, 32] (ResNet-18), labels in [0, 10);
// ddp_scaling.py draws the same numbers from the same seed.
std::pair<torch::Tensor, torch::Tensor> synthetic_data(const Args& a, std::int64_t n) {
  if (a.model == "mlp") return tnt_bench::synthetic_data("mlp", n, a.seed);
  torch::manual_seed(a.seed);
  torch::Tensor x = torch::randn({n, 3, a.image_size, a.image_size});
  torch::Tensor y = torch::randint(0, a.classes, {n}, torch::kLong);
  return {x, y};
}

template <typename Net>
Net make_net(const Args& a) {
  if constexpr (std::is_same_v<Net, tnt_bench::ResNet18>) {
    return Net(static_cast<int>(a.classes));
  } else {
    return Net();
  }
}

std::string host_name() {
  char name[256] = {};
  ::gethostname(name, sizeof(name) - 1);
  return name;
}

void print_result(const Args& a, int ranks, std::int64_t parameters,
                  const std::vector<double>& step_s) {
  std::vector<double> step_ms;
  for (double s : step_s) step_ms.push_back(s * 1e3);
  fmt::print(
      "RESULT {{\"variant\": \"{}\", \"model\": \"{}\", \"batch\": {}, \"ranks\": {}, "
      "\"threads\": {}, \"parameters\": {}, \"host\": \"{}\", \"image_size\": {}, "
      "\"mixed_precision\": \"{}\", \"step_ms\": [{:.3f}]}}\n",
      a.variant, a.model, a.batch, ranks, at::get_num_threads(), parameters, host_name(),
      a.image_size, a.mixed_precision, fmt::join(step_ms, ", "));
  std::fflush(stdout);
}

std::int64_t parameter_count(const torch::nn::Module& net) {
  std::int64_t n = 0;
  for (const auto& p : net.parameters()) n += p.numel();
  return n;
}

// The floor: forward, loss, backward, SGD step, nothing exchanged. .grad is
// reset rather than zeroed, as fit() does (the fastest plain loop).
template <typename Net>
void run_plain(const Args& a) {
  at::set_num_threads(a.threads);
  const auto [x, y] = synthetic_data(a, a.batch * a.distinct_batches);
  torch::manual_seed(a.seed + 1);
  Net net = make_net<Net>(a);
  net->train();
  torch::optim::SGD optimizer(net->parameters(),
                              torch::optim::SGDOptions(0.01).momentum(a.momentum));
  std::vector<double> step_s;
  for (std::int64_t step = 0; step < a.steps; ++step) {
    const auto start = Clock::now();
    const std::int64_t first = (step % a.distinct_batches) * a.batch;
    for (auto& p : net->parameters()) p.mutable_grad().reset();
    const torch::Tensor loss = torch::nn::functional::cross_entropy(
        net->forward(x.narrow(0, first, a.batch)), y.narrow(0, first, a.batch));
    loss.backward();
    optimizer.step();
    step_s.push_back(std::chrono::duration<double>(Clock::now() - start).count());
  }
  print_result(a, 1, parameter_count(*net), step_s);
}

// Wall time of every step: from its on_train_batch_begin to the next one's
// (the last one to the end of the epoch, metrics aggregation included).
// It reads no per-batch logs (which would make the host wait for a GPU every
// step, a cost plain loops do not pay). On a GPU the host runs ahead of the
// device, so single steps mean little there; the GPU is synchronised before
// step `sync_before` and at the end, so that the sum of the steps from
// `sync_before` on is the device's time for them.
struct StepTimer : tnt::callbacks::Callback {
  explicit StepTimer(std::int64_t sync_before) : sync_before(sync_before) {}
  std::int64_t sync_before;
  std::vector<Clock::time_point> marks;
  bool wants_batch_logs(std::int64_t) const override { return false; }
  void on_train_batch_begin(std::int64_t batch, const tnt::callbacks::Logs&) override {
    if (batch == sync_before) synchronize();
    marks.push_back(Clock::now());
  }
  void on_epoch_end(std::int64_t, const tnt::callbacks::Logs&) override {
    synchronize();
    marks.push_back(Clock::now());
  }
  std::vector<double> step_seconds() const {
    std::vector<double> s;
    for (std::size_t i = 1; i < marks.size(); ++i) {
      s.push_back(std::chrono::duration<double>(marks[i] - marks[i - 1]).count());
    }
    return s;
  }
  static void synchronize() {
    if (torch::cuda::is_available()) torch::cuda::synchronize();
  }
};

template <typename Net>
void run_tnt(const Args& a) {
  const auto [x, y] = synthetic_data(a, a.batch * a.distinct_batches);
  const auto train = tnt::data::Dataset::from_tensor_slices({x, y}).batch(a.batch).repeat();
  torch::manual_seed(a.seed + 1);
  Net net = make_net<Net>(a);
  const std::int64_t parameters = parameter_count(*net);
  tnt::Model model{net};
  const auto compression = a.compression == "float16"    ? tnt::dp::Compression::Float16
                           : a.compression == "bfloat16" ? tnt::dp::Compression::BFloat16
                                                         : tnt::dp::Compression::None;
  model.compile(tnt::CompileOptions()
                    .optimizer(tnt::optimizers::SGD(0.01, a.momentum))
                    .loss(tnt::losses::SparseCategoricalCrossentropy())
                    .compression(compression)
                    .mixed_precision(a.mixed_precision == "float16" ? tnt::MixedPrecision::Float16
                                     : a.mixed_precision == "bfloat16"
                                         ? tnt::MixedPrecision::BFloat16
                                         : tnt::MixedPrecision::None));
  auto timer = std::make_shared<StepTimer>(a.warmup);
  model.fit(train,
            tnt::FitOptions().epochs(1).steps_per_epoch(a.steps).verbose(0).callbacks({timer}));
  if (tnt::is_master_rank()) print_result(a, tnt::get_size(), parameters, timer->step_seconds());
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  CLI::App app{"Step time of one configuration of the scaling benchmark (see run.sh)"};
  app.add_option("--variant", a.variant, "plain or tnt")->check(CLI::IsMember({"plain", "tnt"}));
  app.add_option("--model", a.model, "mlp or resnet18")->check(CLI::IsMember({"mlp", "resnet18"}));
  app.add_option("--batch-size", a.batch, "global batch size (plain: the batch it computes)")
      ->check(CLI::PositiveNumber);
  app.add_option("--steps", a.steps, "training steps, all timed")->check(CLI::PositiveNumber);
  app.add_option("--distinct-batches", a.distinct_batches, "batches of data, repeated")
      ->check(CLI::PositiveNumber);
  app.add_option("--threads", a.threads, "intra-op threads (plain)")->check(CLI::PositiveNumber);
  app.add_option("--seed", a.seed, "seed of data and weights");
  app.add_option("--warmup", a.warmup,
                 "tnt: synchronise the GPU before this step, so that the steps from it on "
                 "sum to the device's time (the report drops the ones before)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--compression", a.compression, "gradients on the wire (tnt)")
      ->check(CLI::IsMember({"none", "float16", "bfloat16"}));
  app.add_option("--mixed-precision", a.mixed_precision, "autocast with loss scaling (tnt)")
      ->check(CLI::IsMember({"none", "float16", "bfloat16"}));
  app.add_option("--image-size", a.image_size, "ResNet-18's input height and width")
      ->check(CLI::PositiveNumber);
  app.add_option("--classes", a.classes, "ResNet-18's classes")->check(CLI::PositiveNumber);
  app.add_option("--momentum", a.momentum, "SGD momentum");
  CLI11_PARSE(app, argc, argv);

  const bool mlp = a.model == "mlp";
  if (a.variant == "plain") {
    mlp ? run_plain<tnt_bench::Mlp>(a) : run_plain<tnt_bench::ResNet18>(a);
    return 0;
  }
  tnt::Runtime runtime(argc, argv);
  mlp ? run_tnt<tnt_bench::Mlp>(a) : run_tnt<tnt_bench::ResNet18>(a);
  return 0;
}
