// "Bring your own LibTorch program": the traps a network written for plain
// LibTorch (PyTorch's C++ MNIST example: a value module ending in
// log_softmax) falls into, and what Tarantella does about them. Single
// process, no MPI: a tnt::Model without a runtime trains on a one-rank group.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <functional>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include <torch/torch.h>

#include <tarantella/tarantella.h>

namespace {

namespace L = tnt::losses;
namespace F = torch::nn::functional;

// A plain value module, not a TORCH_MODULE holder.
struct ValueNet : torch::nn::Module {
  ValueNet() : fc(register_module("fc", torch::nn::Linear(4, 3))) {}
  torch::Tensor forward(torch::Tensor x) { return torch::log_softmax(fc(x), 1); }
  torch::nn::Linear fc;
};

static_assert(std::is_constructible_v<tnt::Model, ValueNet>,
              "a value module with forward(Tensor) wraps");
static_assert(!std::is_constructible_v<tnt::Model, int>,
              "Model's constructor template stays SFINAE-constrained");

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const tnt::Error& e) {
    return e.what();
  }
  return "(no tnt::Error thrown)";
}

TEST(ByopTraps, NLLLossEqualsTorchNllLoss) {
  torch::manual_seed(1);
  const torch::Tensor log_p = torch::log_softmax(torch::randn({16, 5}), 1);
  const torch::Tensor target = torch::randint(0, 5, {16}, torch::kLong);
  const L::Loss loss = L::NLLLoss();
  EXPECT_FALSE(loss.name.empty());
  EXPECT_NE(loss.config.find("NLLLoss"), std::string::npos) << loss.config;
  EXPECT_NEAR(loss(log_p, target).item<double>(), F::nll_loss(log_p, target).item<double>(),
              1e-6);
}

TEST(ByopTraps, NLLLossRefusesRawScores) {
  const torch::Tensor scores = torch::tensor({{2.0, -1.0, 0.5}, {0.1, 0.3, 3.0}});
  const std::string msg = message_of([&] { L::NLLLoss()(scores, torch::tensor({0, 2})); });
  EXPECT_NE(msg.find("not log-probabilities"), std::string::npos) << msg;
  EXPECT_NE(msg.find("SparseCategoricalCrossentropy"), std::string::npos) << msg;
}

TEST(ByopTraps, ProbabilityLossRefusesLogProbabilities) {
  torch::manual_seed(2);
  const torch::Tensor log_p = torch::log_softmax(torch::randn({8, 4}), 1);
  const torch::Tensor target = torch::randint(0, 4, {8}, torch::kLong);
  const L::Loss loss = L::SparseCategoricalCrossentropy(L::LossOptions().from_logits(false));
  EXPECT_THROW(loss(log_p, target), tnt::Error);
  const std::string msg = message_of([&] { loss(log_p, target); });
  EXPECT_NE(msg.find("NLLLoss"), std::string::npos) << msg;
  EXPECT_NE(msg.find("not probabilities"), std::string::npos) << msg;
  EXPECT_NE(msg.find("from_logits(true)"), std::string::npos) << msg;

  const L::Loss categorical = L::CategoricalCrossentropy(L::LossOptions().from_logits(false));
  const torch::Tensor one_hot = F::one_hot(target, 4).to(torch::kFloat);
  EXPECT_THROW(categorical(log_p, one_hot), tnt::Error);
}

TEST(ByopTraps, ProbabilityLossAcceptsSoftmaxOutputs) {
  torch::manual_seed(3);
  const torch::Tensor p = torch::softmax(torch::randn({8, 4}, torch::kDouble), 1);
  const torch::Tensor target = torch::randint(0, 4, {8}, torch::kLong);
  const L::Loss loss = L::SparseCategoricalCrossentropy(L::LossOptions().from_logits(false));
  torch::Tensor value;
  EXPECT_NO_THROW(value = loss(p, target));
  const double expected = (-p.gather(1, target.unsqueeze(1)).log()).mean().item<double>();
  EXPECT_NEAR(value.item<double>(), expected, 1e-6);

  const L::Loss categorical = L::CategoricalCrossentropy(L::LossOptions().from_logits(false));
  EXPECT_NO_THROW(categorical(p, F::one_hot(target, 4).to(torch::kDouble)));
}

TEST(ByopTraps, ValueModuleWraps) {
  tnt::Model model{ValueNet()};
  const torch::Tensor x = torch::randn({5, 4});
  const torch::Tensor y = model.forward({x});
  EXPECT_EQ(y.sizes().vec(), (std::vector<std::int64_t>{5, 3}));
  EXPECT_EQ(model.named_parameters().size(), 2u);  // fc.weight, fc.bias
}

// torch::nn::Sequential's forward is a variadic template: it compiles with
// a vector of tensors too, and must get the tensors themselves.
TEST(ByopTraps, TorchSequentialWraps) {
  torch::nn::Sequential net(torch::nn::Linear(4, 8), torch::nn::ReLU(), torch::nn::Linear(8, 3));
  tnt::Model model{net};
  EXPECT_EQ(model.forward({torch::randn({5, 4})}).sizes().vec(), (std::vector<std::int64_t>{5, 3}));
}

// The copy the model owns shares the caller's parameter tensors (see
// make_adapter in module_adapter.h): after training, the caller's object
// holds the trained weights.
TEST(ByopTraps, ValueModuleCopySharesParametersWithTheCaller) {
  torch::manual_seed(4);
  ValueNet net;
  tnt::Model model{net};
  const auto params = model.named_parameters();
  ASSERT_EQ(params.size(), 2u);
  EXPECT_TRUE(params[0].second.is_same(net.fc->weight));
  EXPECT_TRUE(params[1].second.is_same(net.fc->bias));

  // A learnable problem: the label is the largest of the first 3 features.
  const torch::Tensor x = torch::randn({64, 4});
  const torch::Tensor labels = x.narrow(1, 0, 3).argmax(1);
  const auto train = tnt::data::Dataset::from_tensor_slices({x, labels}).batch(16);
  model.compile(tnt::CompileOptions()
                    .optimizer(tnt::optimizers::SGD(0.5))
                    .loss(tnt::losses::NLLLoss()));
  const double before = model.evaluate(train, tnt::EvaluateOptions().verbose(0)).at("loss");
  model.fit(train, tnt::FitOptions().epochs(10).verbose(0));
  const double after = model.evaluate(train, tnt::EvaluateOptions().verbose(0)).at("loss");
  EXPECT_LT(after, before);
  EXPECT_TRUE(torch::equal(model.named_parameters()[0].second.detach().cpu(),
                           net.fc->weight.detach().cpu()));
}

// Output paths that cannot be written are found when
// training starts, not after the first epoch; NaN is not a learning rate.
struct CountBatches : tnt::callbacks::Callback {
  int batches = 0;
  void on_train_batch_end(std::int64_t, const tnt::callbacks::Logs&) override { ++batches; }
};

TEST(ByopTraps, UnwritableOutputPathsFailBeforeTheFirstBatch) {
  const std::string file = testing::TempDir() + "tnt_not_a_directory";
  { std::ofstream(file) << "a regular file"; }
  const torch::Tensor x = torch::randn({32, 4});
  const auto train = tnt::data::Dataset::from_tensor_slices({x, x.narrow(1, 0, 3).argmax(1)}).batch(8);
  for (const auto& [who, callback] :
       std::vector<std::pair<std::string, tnt::callbacks::CallbackPtr>>{
           {"ModelCheckpoint", std::make_shared<tnt::callbacks::ModelCheckpoint>(
                                   tnt::callbacks::ModelCheckpointOptions(file + "/ckpt-{epoch}.pt"))},
           {"CSVLogger", std::make_shared<tnt::callbacks::CSVLogger>(file + "/log.csv")}}) {
    SCOPED_TRACE(who);
    tnt::Model model{ValueNet()};
    model.compile(tnt::CompileOptions().optimizer(tnt::optimizers::SGD(0.1)).loss(L::NLLLoss()));
    auto count = std::make_shared<CountBatches>();
    const std::string message = message_of([&] {
      model.fit(train, tnt::FitOptions().epochs(1).verbose(0).callbacks({count, callback}));
    });
    EXPECT_NE(message.find(who), std::string::npos) << message;
    EXPECT_NE(message.find(file), std::string::npos) << message;
    EXPECT_NE(message.find("not a directory"), std::string::npos) << message;
    EXPECT_EQ(count->batches, 0) << "the error came after training had started";
  }
  std::remove(file.c_str());
}

TEST(ByopTraps, LearningRateMustBeFinite) {
  for (double lr : {std::nan(""), std::numeric_limits<double>::infinity(), -0.1}) {
    const std::string message = message_of([&] { tnt::optimizers::SGD(lr); });
    EXPECT_NE(message.find("SGD: learning_rate must be a finite number >= 0"), std::string::npos)
        << message;
    EXPECT_NE(message_of([&] { tnt::optimizers::Adam(lr); }).find("Adam: learning_rate"),
              std::string::npos);
  }
}

// Data that does not fit the model is named as such, not
// left to LibTorch's bare "Target 5 is out of bounds" or "mat1 and mat2
// shapes cannot be multiplied".
TEST(ByopTraps, DataThatDoesNotFitTheModelIsNamed) {
  const torch::Tensor x = torch::randn({16, 4});
  {
    tnt::Model model{ValueNet()};  // 3 classes
    model.compile(tnt::CompileOptions().optimizer(tnt::optimizers::SGD(0.1)).loss(L::NLLLoss()));
    const auto labels = torch::arange(16, torch::kLong) % 6;  // 0..5
    const std::string message = message_of([&] {
      model.fit(tnt::data::Dataset::from_tensor_slices({x, labels}).batch(16),
                tnt::FitOptions().verbose(0));
    });
    EXPECT_NE(message.find("NLLLoss: a label of this batch is 5, outside the model's 3 classes"),
              std::string::npos)
        << message;
  }
  {
    tnt::Model model{ValueNet()};
    model.compile(tnt::CompileOptions().optimizer(tnt::optimizers::SGD(0.1)).loss(L::NLLLoss()));
    const auto wrong = torch::randn({16, 5});  // the model takes 4 features
    const std::string message = message_of([&] {
      model.fit(tnt::data::Dataset::from_tensor_slices({wrong, torch::zeros({16}, torch::kLong)})
                    .batch(8),
                tnt::FitOptions().verbose(0));
    });
    EXPECT_NE(message.find("forward() failed on a micro-batch of 8 samples"), std::string::npos)
        << message;
    EXPECT_NE(message.find("[8, 5]"), std::string::npos) << message;
  }
}

// A device mismatch inside forward (on a GPU: a tensor member that is not a
// registered buffer, a torch::zeros without the input's options) is the
// model's: the message says how to fix the model, not the data. LibTorch's
// own words, raised here as a GPU would raise them.
struct DeviceMismatchNet : torch::nn::Module {
  DeviceMismatchNet() : fc(register_module("fc", torch::nn::Linear(4, 3))) {}
  torch::Tensor forward(const torch::Tensor& x) {
    TORCH_CHECK(x.size(0) < 0, "Expected all tensors to be on the same device, but found at "
                               "least two devices, cuda:0 and cpu!");
    return fc->forward(x);
  }
  torch::nn::Linear fc;
};

TEST(ByopTraps, ADeviceMismatchInForwardNamesTheModelsFix) {
  tnt::Model model{DeviceMismatchNet()};
  model.compile(tnt::CompileOptions().optimizer(tnt::optimizers::SGD(0.1)).loss(L::NLLLoss()));
  const std::string message = message_of([&] {
    model.fit(tnt::data::Dataset::from_tensor_slices(
                  {torch::randn({8, 4}), torch::zeros({8}, torch::kLong)})
                  .batch(8),
              tnt::FitOptions().verbose(0));
  });
  EXPECT_NE(message.find("register it as a buffer"), std::string::npos) << message;
  EXPECT_NE(message.find("x.options()"), std::string::npos) << message;
  EXPECT_EQ(message.find("check that the dataset's elements"), std::string::npos) << message;
}

}  // namespace
