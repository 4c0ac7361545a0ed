// A plain LibTorch training program in the style of PyTorch's C++ MNIST
// example (pytorch/examples, cpp/mnist): a torch::data dataset with
// transforms, a DataLoader, SGD, a hand-written train()/test() loop,
// log_softmax + nll_loss. mnist.cpp knows nothing of Tarantella;
// mnist_distributed.cpp is the same program with four lines changed (marked
// "tarantella"; docs/guide/byop.md shows the diff), run with the launcher:
//
//   mnist DATA_DIR [EPOCHS] [WEIGHTS_OUT] [MAX_BATCHES]
//   tarantella -n 2 -- mnist_distributed DATA_DIR [EPOCHS] [WEIGHTS_OUT] [MAX_BATCHES]
// MAX_BATCHES (default: all) ends each epoch early (the tests use it).
// DATA_DIR holds the four uncompressed IDX files (train-images-idx3-ubyte,
// ...), e.g. Fashion-MNIST's.
#include <tarantella/tarantella.h>  // tarantella
#include <torch/torch.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>
#include <unistd.h>

const int64_t kTrainBatchSize = 64;
const int64_t kTestBatchSize = 1000;
const int64_t kLogInterval = 100;
size_t max_batches = SIZE_MAX;

struct Net : torch::nn::Module {
  Net()
      : conv1(torch::nn::Conv2dOptions(1, 10, /*kernel_size=*/5)),
        conv2(torch::nn::Conv2dOptions(10, 20, /*kernel_size=*/5)),
        fc1(320, 50),
        fc2(50, 10) {
    register_module("conv1", conv1);
    register_module("conv2", conv2);
    register_module("fc1", fc1);
    register_module("fc2", fc2);
  }

  torch::Tensor forward(torch::Tensor x) {
    x = torch::relu(torch::max_pool2d(conv1->forward(x), 2));
    x = torch::relu(torch::max_pool2d(conv2->forward(x), 2));
    x = torch::relu(fc1->forward(x.view({-1, 320})));
    return torch::log_softmax(fc2->forward(x), /*dim=*/1);
  }

  torch::nn::Conv2d conv1;
  torch::nn::Conv2d conv2;
  torch::nn::Linear fc1;
  torch::nn::Linear fc2;
};

template <typename DataLoader>
void train(size_t epoch, Net& model, torch::Device device, DataLoader& data_loader,
           torch::optim::Optimizer& optimizer) {
  model.train();
  size_t batch_idx = 0;
  for (auto& batch : data_loader) {
    if (batch_idx == max_batches) break;
    torch::Tensor data = batch.data.to(device), targets = batch.target.to(device);
    optimizer.zero_grad();
    torch::Tensor output = model.forward(data);
    torch::Tensor loss = torch::nll_loss(output, targets);
    loss.backward();
    optimizer.step();
    if (batch_idx++ % kLogInterval == 0) {
      std::printf("Train Epoch: %zu batch %zu loss: %.4f\n", epoch, batch_idx, loss.item<float>());
    }
  }
}

template <typename DataLoader>
void test(Net& model, torch::Device device, DataLoader& data_loader, size_t dataset_size) {
  torch::NoGradGuard no_grad;
  model.eval();
  double test_loss = 0;
  int64_t correct = 0;
  for (const auto& batch : data_loader) {
    torch::Tensor data = batch.data.to(device), targets = batch.target.to(device);
    torch::Tensor output = model.forward(data);
    torch::Tensor loss_sum = torch::nll_loss(output, targets, {}, torch::Reduction::Sum);
    torch::Tensor right = output.argmax(1).eq(targets).sum();
    test_loss += loss_sum.item<double>();
    correct += right.item<int64_t>();
  }
  std::printf("Test set: average loss: %.4f | accuracy: %.4f\n", test_loss / dataset_size,
              static_cast<double>(correct) / dataset_size);
}

// The weights in torch.save's format, written to a temporary name and renamed.
void save_weights(Net& model, const std::string& path) {
  c10::List<torch::Tensor> weights;
  for (const auto& p : model.parameters()) weights.push_back(p.detach().cpu());
  const std::vector<char> bytes = torch::pickle_save(weights);
  const std::string tmp = path + ".tmp." + std::to_string(getpid());
  std::ofstream(tmp, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  std::rename(tmp.c_str(), path.c_str());
}

int main(int argc, char** argv) {
  tnt::Runtime runtime(argc, argv);  // tarantella
  const std::string data_root = argc > 1 ? argv[1] : "./data";
  const size_t epochs = argc > 2 ? std::stoul(argv[2]) : 1;
  if (argc > 4) max_batches = std::stoul(argv[4]);
  // On a GPU where there is one (with the Runtime: this rank's).
  torch::Device device(torch::cuda::is_available() ? torch::kCUDA : torch::kCPU);
  torch::manual_seed(1);
  Net model;
  model.to(device);

  auto train_dataset = torch::data::datasets::MNIST(data_root)
                           .map(torch::data::transforms::Normalize<>(0.2860, 0.3530))
                           .map(torch::data::transforms::Stack<>());
  auto train_loader = tnt::data::make_data_loader<torch::data::samplers::SequentialSampler>(std::move(train_dataset), kTrainBatchSize);  // tarantella
  auto test_dataset = torch::data::datasets::MNIST(data_root, torch::data::datasets::MNIST::Mode::kTest)
                          .map(torch::data::transforms::Normalize<>(0.2860, 0.3530))
                          .map(torch::data::transforms::Stack<>());
  const size_t test_size = test_dataset.size().value();
  auto test_loader = torch::data::make_data_loader(std::move(test_dataset), kTestBatchSize);

  tnt::DistributedOptimizer optimizer(torch::optim::SGD(model.parameters(), torch::optim::SGDOptions(0.01).momentum(0.5)), train_loader->share());  // tarantella

  for (size_t epoch = 1; epoch <= epochs; ++epoch) {
    train(epoch, model, device, *train_loader, optimizer);
    test(model, device, *test_loader, test_size);
  }
  if (argc > 3) save_weights(model, argv[3]);
}
