// The pipeline-stages chapter of the user guide (guide/pipelining.md) as a
// program that CI runs at 2 ranks: a Sequential cut into 2 stages at its
// SplitPoint, trained for an epoch on random data. Regions between
// "// [snippet:NAME]" and "// [end]" appear verbatim in the guide;
// tests/docs/check_snippets.py keeps the two equal.
//
// Run it:   tarantella -n 2 -- ./doc_snippet_pipelining
#include <iostream>
#include <optional>

#include <torch/torch.h>

#include <tarantella/tarantella.h>

int main(int argc, char** argv) {
  tnt::Runtime runtime(argc, argv);
  // [snippet:pipelining_model]
  torch::nn::Sequential net(torch::nn::Linear(784, 512), torch::nn::ReLU(),
                            tnt::nn::SplitPoint(),  // stage 0 ends here
                            torch::nn::Linear(512, 10));
  tnt::Model model(net, tnt::PipelineOptions().stages(2).micro_batches(8));
  // [end]
  model.compile(tnt::CompileOptions()
                    .optimizer(tnt::optimizers::SGD(0.1))
                    .loss(tnt::losses::SparseCategoricalCrossentropy()));
  auto train = tnt::data::Dataset::from_tensor_slices(
                   {torch::randn({256, 784}), torch::randint(0, 10, {256})})
                   .batch(64);
  const auto history = model.fit(train, tnt::FitOptions().epochs(1).verbose(0));
  if (tnt::is_master_rank()) {
    std::cout << "2 stages: loss " << history.history.at("loss").front() << "\n";
  }
  // [snippet:pipelining_position]
  if (std::optional<tnt::PipelinePosition> where = model.pipeline()) {
    std::cout << "rank " << tnt::get_rank() << ": stage " << where->stage << " of "
              << where->stages << ", replica " << where->replica << " of " << where->replicas
              << "\n";  // rank 1 of 2: stage 1 of 2, replica 0 of 1
  }
  // [end]
  const std::optional<tnt::PipelinePosition> where = model.pipeline();
  if (!where || where->stage != tnt::get_rank() % 2 || where->replica != tnt::get_rank() / 2) {
    std::cerr << "rank " << tnt::get_rank() << ": model.pipeline() is not this rank's place\n";
    return 1;
  }
  return 0;
}
