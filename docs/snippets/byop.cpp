// "Bring your own LibTorch program" (docs/guide/byop.md) as one program that
// CI builds: both routes on a torch::data pipeline. The keep-your-loop route
// is also examples/mnist_loop/mnist_distributed.cpp, which a test runs
// against the plain loop.
//
// Run it:   tarantella -n 2 -- ./doc_snippet_byop DATA_DIR
// DATA_DIR holds the uncompressed IDX files of (Fashion-)MNIST.
#include <torch/torch.h>

#include <tarantella/tarantella.h>

namespace {

struct Net : torch::nn::Module {
  Net() : fc1(784, 64), fc2(64, 10) {
    register_module("fc1", fc1);
    register_module("fc2", fc2);
  }
  torch::Tensor forward(torch::Tensor x) {
    return torch::log_softmax(fc2->forward(torch::relu(fc1->forward(x.flatten(1)))), 1);
  }
  torch::nn::Linear fc1, fc2;
};

void keep_your_loop(const std::string& root) {
  Net model;
  // [snippet:byop_loop]
  auto dataset = torch::data::datasets::MNIST(root)
                     .map(torch::data::transforms::Normalize<>(0.2860, 0.3530))
                     .map(torch::data::transforms::Stack<>());
  // was: torch::data::make_data_loader(std::move(dataset), 64)
  auto loader = tnt::data::make_data_loader(std::move(dataset), /*global batch=*/64);
  // was: torch::optim::SGD optimizer(model.parameters(), ...)
  tnt::DistributedOptimizer optimizer(
      torch::optim::SGD(model.parameters(), torch::optim::SGDOptions(0.01).momentum(0.5)),
      loader->share());
  for (auto& batch : *loader) {  // one epoch; this rank's share of every batch
    optimizer.zero_grad();
    auto loss = torch::nll_loss(model.forward(batch.data), batch.target);
    loss.backward();   // buckets leave for the allreduce while backward runs
    optimizer.step();  // waits for the summed gradients, then steps
  }
  // [end]
}

void move_to_fit(const std::string& root) {
  // [snippet:byop_fit]
  auto train = tnt::data::from_torch(torch::data::datasets::MNIST(root)
                                         .map(torch::data::transforms::Normalize<>(0.2860, 0.3530))
                                         .map(torch::data::transforms::Stack<>()))
                   .batch(64);  // the GLOBAL batch size
  tnt::Model model{Net()};      // a value module works as well as a holder
  model.compile(tnt::CompileOptions()
                    .optimizer(tnt::optimizers::SGD(tnt::optimizers::SGDOptions(0.01).momentum(0.5)))
                    .loss(tnt::losses::NLLLoss())  // for log_softmax outputs
                    .metrics({tnt::metrics::SparseCategoricalAccuracy()}));
  model.fit(train, tnt::FitOptions().epochs(1).verbose(2));
  // [end]
}

}  // namespace

int main(int argc, char** argv) {
  tnt::Runtime runtime(argc, argv);
  const std::string root = argc > 1 ? argv[1] : "./data";
  keep_your_loop(root);
  move_to_fit(root);
}
