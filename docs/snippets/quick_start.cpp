// The quick start of the user guide (docs/guide/quick_start.md), as one
// program that CI builds and runs at 2 ranks. The regions between
// "// [snippet:NAME]" and "// [end]" appear verbatim in the guide;
// tests/docs/check_snippets.py fails when the two differ.
//
// Run it:   tarantella -n 2 -- ./doc_snippet_quick_start [max_batches]
// max_batches (default: all) trims every dataset to its first batches so
// that CI finishes in seconds; it is the only thing the guide leaves out.
#include <cstdint>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

// [snippet:quick_start_include]
#include <torch/torch.h>
#include <tarantella/tarantella.h>  // 1. the whole Tarantella API
// [end]

namespace {

// [snippet:quick_start_lenet5]
// LeNet-5: a plain LibTorch module, exactly as for serial training.
struct LeNet5Impl : torch::nn::Module {
  LeNet5Impl()
      : conv1(register_module("conv1",
                              torch::nn::Conv2d(torch::nn::Conv2dOptions(1, 6, 5).padding(2)))),
        conv2(register_module("conv2", torch::nn::Conv2d(6, 16, 5))),
        fc1(register_module("fc1", torch::nn::Linear(400, 120))),
        fc2(register_module("fc2", torch::nn::Linear(120, 84))),
        fc3(register_module("fc3", torch::nn::Linear(84, 10))) {}

  torch::Tensor forward(torch::Tensor x) {
    x = torch::max_pool2d(torch::relu(conv1(x)), 2);
    x = torch::max_pool2d(torch::relu(conv2(x)), 2);
    x = torch::relu(fc1(x.flatten(1)));
    x = torch::relu(fc2(x));
    return fc3(x);  // logits
  }

  torch::nn::Conv2d conv1, conv2;
  torch::nn::Linear fc1, fc2, fc3;
};
TORCH_MODULE(LeNet5);
// [end]

// [snippet:quick_start_custom_callback]
// Prints the global loss after every epoch, on the master rank only.
struct PrintLoss : tnt::callbacks::Callback {
  PrintLoss() { run_on_all_ranks = false; }
  void on_epoch_end(std::int64_t epoch, const tnt::callbacks::Logs& logs) override {
    std::cout << "epoch " << epoch + 1 << ": loss " << logs.at("loss") << "\n";
  }
};
// [end]

// The same network from the layer registry: a model whose architecture is
// stored in its checkpoint, so tnt::models::load_model can rebuild it.
// [snippet:quick_start_sequential]
tnt::Model make_sequential_lenet5() {
  namespace L = tnt::layers;
  return tnt::Model{
      L::Sequential({L::Conv2D(1, 6, 5, 1, "same", "relu"), L::MaxPool2D(2),
                     L::Conv2D(6, 16, 5, 1, "valid", "relu"), L::MaxPool2D(2), L::Flatten(),
                     L::Dense(400, 120, "relu"), L::Dense(120, 84, "relu"), L::Dense(84, 10)})};
}
// [end]

}  // namespace

// [snippet:quick_start_main]
int main(int argc, char** argv) {
  tnt::Runtime runtime(argc, argv);  // start the runtime: first thing in main
  // ... data, model, training: as without Tarantella ...
  // [end]
  const std::int64_t max_batches = argc > 1 ? std::stoll(argv[1]) : -1;  // -1: all

  // [snippet:quick_start_data]
  namespace data = tnt::data;
  const std::int64_t batch_size = 64;  // the GLOBAL batch size, whatever the rank count
  data::Dataset train = data::datasets::fashion_mnist("train")
                            .shuffle(60000, /*seed=*/42)  // every rank shuffles alike
                            .batch(batch_size);
  data::Dataset test = data::datasets::fashion_mnist("test").batch(batch_size);
  // [end]
  train = train.take(max_batches);  // CI: a few batches only
  test = test.take(max_batches);

  // [snippet:quick_start_compile]
  torch::manual_seed(42);
  tnt::Model model{LeNet5()};  // 2. wrap the network (braces, not parentheses)
  model.compile(tnt::CompileOptions()
                    .optimizer(tnt::optimizers::SGD(/*learning_rate=*/0.1))
                    .loss(tnt::losses::SparseCategoricalCrossentropy())
                    .metrics({tnt::metrics::SparseCategoricalAccuracy()}));
  model.summary();  // printed on the master rank
  // [end]

  // [snippet:quick_start_fit]
  tnt::callbacks::History history =
      model.fit(train, tnt::FitOptions().epochs(2).validation_data(test).verbose(1));
  std::map<std::string, double> results = model.evaluate(test);
  if (tnt::is_master_rank()) {
    std::cout << "test accuracy " << results.at("sparse_categorical_accuracy") << " after "
              << history.history.at("loss").size() << " epochs on " << tnt::get_size()
              << " ranks\n";
  }
  // [end]

  // [snippet:quick_start_weights]
  model.save_weights("lenet5_weights.pt");  // torch.save format, written by the master rank
  tnt::Model fresh{LeNet5()};
  fresh.load_weights("lenet5_weights.pt");  // read on the master, broadcast to every rank
  // [end]
  TNT_CHECK(torch::equal(fresh.get_weights()[0], model.get_weights()[0]),
            "load_weights did not restore the weights");

  // [snippet:quick_start_checkpoint]
  model.save("lenet5_checkpoint.pt");  // weights, optimizer state, completed epochs, RNG
  tnt::Model resumed{LeNet5()};
  resumed.compile(tnt::CompileOptions()
                      .optimizer(tnt::optimizers::SGD(0.1))
                      .loss(tnt::losses::SparseCategoricalCrossentropy()));
  const std::int64_t done = resumed.load("lenet5_checkpoint.pt");  // 2
  resumed.fit(train, tnt::FitOptions().initial_epoch(done).epochs(3));
  // [end]

  // [snippet:quick_start_load_model]
  tnt::Model sequential = make_sequential_lenet5();
  sequential.compile(tnt::CompileOptions()
                         .optimizer(tnt::optimizers::SGD(0.1))
                         .loss(tnt::losses::SparseCategoricalCrossentropy())
                         .metrics({tnt::metrics::SparseCategoricalAccuracy()}));
  sequential.fit(train, tnt::FitOptions().epochs(1).verbose(0));
  sequential.save("sequential.pt");

  // Architecture, weights, compile configuration and optimizer state:
  tnt::Model loaded = tnt::models::load_model("sequential.pt");
  loaded.fit(train, tnt::FitOptions().initial_epoch(loaded.epochs_done()).epochs(2));

  // The architecture alone, as JSON (fresh weights):
  std::string json = sequential.to_json();
  tnt::Model twin = tnt::models::model_from_json(json);
  tnt::Model copy = tnt::models::clone_model(sequential);  // also fresh weights
  // [end]
  TNT_CHECK(loaded.is_compiled() && !twin.is_compiled() && !copy.is_compiled(),
            "load_model should compile, model_from_json and clone_model should not");

  // [snippet:quick_start_callbacks]
  namespace cb = tnt::callbacks;
  std::filesystem::create_directories("checkpoints");
  std::vector<cb::CallbackPtr> callbacks = {
      // a checkpoint per epoch; the save is collective, the master writes
      std::make_shared<cb::ModelCheckpoint>(
          cb::ModelCheckpointOptions("checkpoints/epoch-{epoch:02d}.pt")),
      // halve the learning rate every second epoch, on every rank alike
      std::make_shared<cb::LearningRateScheduler>(
          [](std::int64_t epoch, double lr) { return epoch > 0 && epoch % 2 == 0 ? lr / 2 : lr; }),
      // TensorBoard event files of the global values, written by the master
      std::make_shared<cb::TensorBoard>(cb::TensorBoardOptions("logs/lenet5")),
      std::make_shared<cb::EarlyStopping>(
          cb::EarlyStoppingOptions().monitor("val_loss").patience(2)),
      std::make_shared<PrintLoss>(),
  };
  model.fit(train, tnt::FitOptions().epochs(4).validation_data(test).callbacks(callbacks));
  // [end]
  return 0;
}
