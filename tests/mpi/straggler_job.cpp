// The straggler report's multi-rank job (tests/mpi/straggler.sh): an MLP
// trained for 30 steps, rank 1's forward sleeping SLEEP_MS extra per step.
// Every rank's forward sleeps 10 ms besides: compute that takes the same
// wall time on every rank however the 2-core test machine's load schedules
// them, so that the few milliseconds a busy machine adds to a rank now and
// then stay within the detector's margin (a sleep, not a spin: it holds no
// core, and ranks may outnumber cores).
// Usage: mpi_straggler_job SLEEP_MS [TENSORBOARD_DIR]
// Run with TNT_STRAGGLER_WINDOW=10 and TNT_LOG_LEVEL=INFO; the script reads
// the master's log, the timeline and the event files.
#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>

#include <torch/torch.h>

#include <tarantella/tarantella.h>

namespace {

struct SlowMlpImpl : torch::nn::Module {
  explicit SlowMlpImpl(int extra_ms) : sleep_ms(kBaseMs + extra_ms) {
    fc1 = register_module("fc1", torch::nn::Linear(16, 32));
    fc2 = register_module("fc2", torch::nn::Linear(32, 4));
  }
  static constexpr int kBaseMs = 10;
  torch::Tensor forward(torch::Tensor x) {
    std::this_thread::sleep_for(std::chrono::milliseconds(sleep_ms));
    return fc2(torch::relu(fc1(x)));
  }
  int sleep_ms;
  torch::nn::Linear fc1{nullptr}, fc2{nullptr};
};
TORCH_MODULE(SlowMlp);

}  // namespace

int main(int argc, char** argv) {
  tnt::Runtime runtime(argc, argv);
  const int sleep_ms = argc > 1 ? std::atoi(argv[1]) : 0;
  const std::string tensorboard_dir = argc > 2 ? argv[2] : "";
  torch::manual_seed(3);
  constexpr std::int64_t kSteps = 30, kBatch = 16;
  const auto train =
      tnt::data::Dataset::from_tensor_slices(
          {torch::randn({kSteps * kBatch, 16}), torch::randint(0, 4, {kSteps * kBatch})})
          .batch(kBatch);
  tnt::Model model(SlowMlp(tnt::get_rank() == 1 ? sleep_ms : 0));
  model.compile(tnt::CompileOptions()
                    .optimizer(tnt::optimizers::SGD(0.01))
                    .loss(tnt::losses::SparseCategoricalCrossentropy()));
  std::vector<tnt::callbacks::CallbackPtr> callbacks;
  if (!tensorboard_dir.empty()) {
    callbacks.push_back(std::make_shared<tnt::callbacks::TensorBoard>(
        tnt::callbacks::TensorBoardOptions(tensorboard_dir)));
  }
  model.fit(train, tnt::FitOptions().epochs(1).verbose(0).callbacks(callbacks));
  return 0;
}
