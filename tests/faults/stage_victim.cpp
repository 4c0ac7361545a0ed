// A pipelined model training in a loop (tests/faults/stalled_stage.sh): the
// test's Sequential (tests/support/stages_net.h) cut into 2 stages, each
// step 8 micro-batches that cross between the stages, over and over.
// Stopping one rank (SIGSTOP) lands in the middle of a step: in a transfer
// between stages, or in its stage's allreduce. The job must end within the
// usual timeout with a message naming that rank, its stage and its pipeline.
#include <cstdio>

#include <tarantella/tarantella.h>

#include "../support/stages_net.h"

int main(int argc, char** argv) {
  tnt::Runtime runtime(argc, argv);
  tnt::Model model(tnt_test::stages_net(true),
                   tnt::PipelineOptions().stages(2).micro_batches(8));
  model.compile(tnt::CompileOptions()
                    .optimizer(tnt::optimizers::SGD(0.01))
                    .loss(tnt::losses::SparseCategoricalCrossentropy()));
  const tnt::data::Dataset train = tnt_test::stages_samples(4096).batch(64);
  for (int epoch = 0;; ++epoch) {
    model.fit(train, tnt::FitOptions().epochs(1).verbose(0));
    if (epoch == 0 && tnt::is_master_rank()) {
      std::printf("Epoch 1/1 (a pipelined model, fitted in a loop)\n");
      std::fflush(stdout);
    }
  }
}
