// The timeline with pipeline stages (mpi.pipeline_timeline.n2, run under
// the launcher's --timeline): the tests' Sequential cut into as many stages
// as ranks, 4 micro-batches, one epoch of 48 samples in batches of 22, so
// that the steps' micro-batches are uneven (6, 6, 5, 5) and the last
// batch's are single samples (1, 1, 1, 1); then an evaluate, whose
// transfers the timeline must not show as a step's. check_timeline.py
// --stages reads the trace.
#include <tarantella/data/dataset.h>
#include <tarantella/keras/losses.h>
#include <tarantella/keras/optimizers.h>
#include <tarantella/model/model.h>
#include <tarantella/model/pipeline.h>
#include <tarantella/runtime/runtime.h>

#include "../support/stages_net.h"

int main(int argc, char** argv) {
  tnt::Runtime runtime(argc, argv);
  tnt::Model model(tnt_test::stages_net(false),
                   tnt::PipelineOptions().stages(tnt::get_size()).micro_batches(4));
  model.compile(tnt::CompileOptions()
                    .optimizer(tnt::optimizers::SGD(0.1))
                    .loss(tnt::losses::SparseCategoricalCrossentropy()));
  model.fit(tnt_test::stages_samples(48).batch(22), tnt::FitOptions().epochs(1).verbose(0));
  model.evaluate(tnt_test::stages_samples(48).batch(22));
  return 0;
}
