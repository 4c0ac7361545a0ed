// The straggler report's multi-rank job (tests/mpi/straggler.sh), at the
// default settings: one process runs several short fits of an MLP, one per
// scenario, and rank 0 marks each on stderr ("straggler_job: fit NAME",
// then "straggler_job: end NAME") around the master's log lines:
//   even      no rank slower: nothing may be reported
//   forward   rank 1's forward sleeps SLEEP_MS more per step (compute)
//   data      a map after batch sleeps SLEEP_MS on rank 1 (data)
//   callback  a callback of its own sleeps SLEEP_MS on rank 1 at every
//             batch begin (callbacks and other); with a TensorBoard callback
// Every rank's forward sleeps 40 ms besides: steps of 40 ms and more take
// the same wall time on every rank however the 2-core test machine's load
// schedules them, so that the few milliseconds a busy machine adds to a
// rank now and then stay within the detector's margin, 20 % or 8 ms here
// (CI once saw a rank woken 7 ms a step late over two windows, which 10 ms
// steps and the 5 ms floor did not absorb). A sleep, not a spin: it holds
// no core, and ranks may outnumber cores. Each fit has 44 steps:
// the default windows report by step 41 (a warm-up step and 2 windows of 20).
// Usage: mpi_straggler_job SLEEP_MS TENSORBOARD_DIR
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <string>
#include <thread>

#include <torch/torch.h>

#include <tarantella/tarantella.h>

namespace {

constexpr std::int64_t kSteps = 44, kBatch = 12;

void sleep_ms(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

struct SlowMlpImpl : torch::nn::Module {
  explicit SlowMlpImpl(int extra_ms) : sleep(kBaseMs + extra_ms) {
    fc1 = register_module("fc1", torch::nn::Linear(16, 32));
    fc2 = register_module("fc2", torch::nn::Linear(32, 4));
  }
  static constexpr int kBaseMs = 40;
  torch::Tensor forward(torch::Tensor x) {
    sleep_ms(sleep);
    return fc2(torch::relu(fc1(x)));
  }
  int sleep;
  torch::nn::Linear fc1{nullptr}, fc2{nullptr};
};
TORCH_MODULE(SlowMlp);

// Runs on every rank (run_on_all_ranks defaults to true).
struct SlowBatchBegin : tnt::callbacks::Callback {
  explicit SlowBatchBegin(int ms) : ms(ms) {}
  void on_train_batch_begin(std::int64_t, const tnt::callbacks::Logs&) override { sleep_ms(ms); }
  int ms;
};

enum class Where { kNowhere, kForward, kData, kCallback };

// `ms`: this rank's sleep. The pipeline and the callbacks are the same on
// every rank; only the sleep differs.
void fit(const std::string& name, Where where, int ms, const std::string& tensorboard_dir) {
  if (tnt::get_rank() == 0) std::cerr << "straggler_job: fit " << name << std::endl;
  torch::manual_seed(3);
  auto train = tnt::data::Dataset::from_tensor_slices(
                   {torch::randn({kSteps * kBatch, 16}), torch::randint(0, 4, {kSteps * kBatch})})
                   .batch(kBatch);
  if (where == Where::kData) {
    train = train.map([ms](tnt::data::Element e) {  // gets this rank's micro-batch
      sleep_ms(ms);
      return e;
    });
  }
  tnt::Model model(SlowMlp(where == Where::kForward ? ms : 0));
  model.compile(tnt::CompileOptions()
                    .optimizer(tnt::optimizers::SGD(0.01))
                    .loss(tnt::losses::SparseCategoricalCrossentropy()));
  std::vector<tnt::callbacks::CallbackPtr> callbacks;
  if (where == Where::kCallback) {
    callbacks.push_back(std::make_shared<SlowBatchBegin>(ms));
    callbacks.push_back(std::make_shared<tnt::callbacks::TensorBoard>(
        tnt::callbacks::TensorBoardOptions(tensorboard_dir)));
  }
  model.fit(train, tnt::FitOptions().epochs(1).verbose(0).callbacks(callbacks));
  if (tnt::get_rank() == 0) std::cerr << "straggler_job: end " << name << std::endl;
}

}  // namespace

int main(int argc, char** argv) {
  tnt::Runtime runtime(argc, argv);
  const int sleep = argc > 1 ? std::atoi(argv[1]) : 100;
  const std::string tensorboard_dir = argc > 2 ? argv[2] : "tb";
  const int slow = tnt::get_rank() == 1 ? sleep : 0;
  fit("even", Where::kNowhere, 0, tensorboard_dir);
  fit("forward", Where::kForward, slow, tensorboard_dir);
  fit("data", Where::kData, slow, tensorboard_dir);
  // Last: the timeline file (one per model, written at the end of its fit)
  // is this fit's, with the report and the counters.
  fit("callback", Where::kCallback, slow, tensorboard_dir);
  return 0;
}
