// The straggler report with pipeline stages (tests/mpi/pipeline_straggler.sh):
// 4 ranks run 2 replicas of a 2-stage pipeline (2 micro-batches a step).
// Stage 1's layers sleep 50 ms per micro-batch, stage 0's 25 ms: an uneven
// but healthy cut. Stage 0's 50 ms per step put the default 20 % margin at
// 10 ms: a loaded machine wakes a sleeping rank a few milliseconds late now
// and then (CI once saw 7 ms a step over two windows against 10 ms sleeps,
// and a report in the healthy fit). Rank 0 marks each fit on stderr around the master's log
// lines ("pipeline_straggler_job: fit NAME" ... "end NAME"):
//   uneven   nothing may be reported (stage 1 is slower than stage 0 by
//            its work, not by a fault; stage 0 waits on it)
//   slowed   rank 3 (stage 1 of pipeline 1) sleeps SLEEP_MS more per
//            micro-batch: it alone is named, against rank 1
// Sleeps, not spins: the ranks outnumber the test machine's cores. Each fit
// has 44 steps: the default windows report by step 41.
// Usage: mpi_pipeline_straggler_job SLEEP_MS
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <string>
#include <thread>

#include <torch/torch.h>

#include <tarantella/tarantella.h>

namespace {

constexpr std::int64_t kSteps = 44, kBatch = 12;

// An identity that sleeps in forward: a stage's work, as long as we like.
class SleepImpl : public torch::nn::Cloneable<SleepImpl> {
 public:
  explicit SleepImpl(int ms = 0) : ms_(ms) {}
  void reset() override {}
  torch::Tensor forward(torch::Tensor x) {
    std::this_thread::sleep_for(std::chrono::milliseconds(ms_));
    return x;
  }

 private:
  int ms_;
};
TORCH_MODULE(Sleep);

void fit(const std::string& name, int extra_ms) {
  if (tnt::get_rank() == 0) std::cerr << "pipeline_straggler_job: fit " << name << std::endl;
  torch::manual_seed(3);
  const auto train = tnt::data::Dataset::from_tensor_slices(
                         {torch::randn({kSteps * kBatch, 16}), torch::randint(0, 4, {kSteps * kBatch})})
                         .batch(kBatch);
  // Every rank builds the whole Sequential; each keeps its stage's part, so
  // only the slowed rank's stage-1 layer sleeps longer.
  torch::nn::Sequential net(torch::nn::Linear(16, 32), Sleep(25), tnt::nn::SplitPoint(),
                            torch::nn::Linear(32, 4), Sleep(50 + extra_ms));
  tnt::Model model(net, tnt::PipelineOptions().stages(2).micro_batches(2));
  model.compile(tnt::CompileOptions()
                    .optimizer(tnt::optimizers::SGD(0.01))
                    .loss(tnt::losses::SparseCategoricalCrossentropy()));
  model.fit(train, tnt::FitOptions().epochs(1).verbose(0));
  if (tnt::get_rank() == 0) std::cerr << "pipeline_straggler_job: end " << name << std::endl;
}

}  // namespace

int main(int argc, char** argv) {
  tnt::Runtime runtime(argc, argv);
  const int sleep = argc > 1 ? std::atoi(argv[1]) : 50;
  fit("uneven", 0);
  fit("slowed", tnt::get_rank() == 3 ? sleep : 0);
  return 0;
}
