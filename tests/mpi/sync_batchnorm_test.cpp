// SyncBatchNorm on real ranks (N = 1..4 through the launcher) against serial
// BatchNorm over the whole global batch, computed on every rank:
//  * the layer: outputs, input/weight/bias gradients, running statistics
//    and evaluation, with uneven micro-batches and an empty one;
//  * training: tnt::Model::fit for 2 epochs (shuffled, batches of 7 and a
//    short last one of 2: empty micro-batches at 3 and 4 ranks) gives the
//    weights and running statistics of a plain LibTorch loop with BatchNorm,
//    for the three ways to get SyncBatchNorm: the drop-in module in a user's
//    class, convert_sync_batchnorm on a torch::nn::Sequential, and the layer
//    registry. The plain loop runs on the model's device (a GPU where the
//    launcher gave one; TF32 is off in these tests: mpi_test_main.cpp).
#include <gtest/gtest.h>

#include <functional>

#include <torch/torch.h>

#include <tarantella/data/dataset.h>
#include <tarantella/tarantella.h>

#include "../support/sync_batchnorm_check.h"

namespace {

namespace L = tnt::layers;

TEST(SyncBatchNormMpi, LayerMatchesSerialBatchNormOverTheGlobalBatch) {
  struct Case {
    std::int64_t batch;
    std::vector<std::int64_t> sample_shape;
  };
  // 7: uneven at 2-4 ranks; 3: rank 3 of 4 has no sample.
  for (const Case& c : {Case{7, {3}}, Case{3, {3}}, Case{7, {2, 3, 3}}, Case{3, {2, 3, 3}}}) {
    const tnt_test::SbnErrors e =
        tnt_test::sbn_check_against_serial(tnt::world(), c.batch, c.sample_shape);
    EXPECT_LE(e.worst(), 1e-5) << "batch " << c.batch << ", " << c.sample_shape.size()
                               << "-d samples: " << e.describe();
    EXPECT_EQ(e.batches_tracked, 2);
  }
}

// ---- training ---------------------------------------------------------------

constexpr std::int64_t kSbnSamples = 23;  // batches of 7: 7, 7, 7 and 2

std::vector<torch::Tensor> sbn_samples() {
  torch::Generator g = at::detail::createCPUGenerator(91);
  const torch::Tensor x = torch::randn({kSbnSamples, 2, 4, 4}, g) * 1.5 + 0.5;
  const torch::Tensor y = torch::randint(0, 3, {kSbnSamples}, g);
  return {x, y};
}

tnt::data::Dataset sbn_train_set() {
  return tnt::data::Dataset::from_tensor_slices(sbn_samples()).shuffle(kSbnSamples, 13).batch(7);
}

// The same network with LibTorch's BatchNorm or with the drop-in.
template <typename Norm2d, typename Norm1d>
struct SbnNetImpl : torch::nn::Module {
  SbnNetImpl() {
    conv = register_module("conv", torch::nn::Conv2d(torch::nn::Conv2dOptions(2, 4, 3).padding(1)));
    bn = register_module("bn", Norm2d(4));
    fc = register_module("fc", torch::nn::Linear(4 * 4 * 4, 8));
    bn_fc = register_module("bn_fc", Norm1d(8));
    out = register_module("out", torch::nn::Linear(8, 3));
  }
  torch::Tensor forward(const torch::Tensor& x) {
    torch::Tensor y = torch::relu(bn(conv(x)));
    y = torch::relu(bn_fc(fc(y.flatten(1))));
    return out(y);
  }
  torch::nn::Conv2d conv{nullptr};
  Norm2d bn{nullptr};
  torch::nn::Linear fc{nullptr};
  Norm1d bn_fc{nullptr};
  torch::nn::Linear out{nullptr};
};
using SerialNet = SbnNetImpl<torch::nn::BatchNorm2d, torch::nn::BatchNorm1d>;
using SyncNet = SbnNetImpl<tnt::nn::SyncBatchNorm, tnt::nn::SyncBatchNorm>;

torch::nn::Sequential sbn_sequential() {
  return torch::nn::Sequential(
      torch::nn::Conv2d(torch::nn::Conv2dOptions(2, 4, 3).padding(1)), torch::nn::BatchNorm2d(4),
      torch::nn::ReLU(), torch::nn::Flatten(), torch::nn::Linear(4 * 4 * 4, 8),
      torch::nn::BatchNorm1d(8), torch::nn::ReLU(), torch::nn::Linear(8, 3));
}

// Keras's momentum 0.9 is PyTorch's 0.1.
L::Sequential sbn_registry(bool sync) {
  const auto norm = [sync](std::int64_t c) {
    return sync ? L::SyncBatchNorm(c, 0.9, 1e-5) : L::BatchNorm(c, 0.9, 1e-5);
  };
  return L::Sequential({L::Conv2D(2, 4, 3, 1, "same"), norm(4), L::Activation("relu"),
                        L::Flatten(), L::Dense(4 * 4 * 4, 8), norm(8), L::Activation("relu"),
                        L::Dense(8, 3)});
}

std::vector<torch::Tensor> sbn_state(const torch::nn::Module& net) {
  std::vector<torch::Tensor> all;
  for (const auto& p : net.named_parameters()) all.push_back(p.value().detach().clone());
  for (const auto& b : net.named_buffers()) all.push_back(b.value().detach().to(torch::kDouble));
  return all;
}

double sbn_worst(const std::vector<torch::Tensor>& got, const std::vector<torch::Tensor>& want) {
  EXPECT_EQ(got.size(), want.size());
  double worst = 0;
  for (std::size_t i = 0; i < std::min(got.size(), want.size()); ++i) {
    worst = std::max(worst, tnt_test::sbn_relative(got[i], want[i]));
  }
  return worst;
}

// Plain LibTorch on `device`: mean cross-entropy over each global batch, SGD.
std::vector<torch::Tensor> sbn_serial(torch::nn::Module& net,
                                      const std::function<torch::Tensor(torch::Tensor)>& forward,
                                      int epochs, torch::Device device) {
  net.to(device);
  torch::optim::SGD opt(net.parameters(), torch::optim::SGDOptions(0.05).momentum(0.9));
  const tnt::data::Dataset train = sbn_train_set();
  net.train();
  for (int e = 0; e < epochs; ++e) {
    auto it = train.iterate(e);
    while (auto batch = it.next()) {
      const torch::Tensor loss = torch::nn::functional::cross_entropy(
          forward((*batch)[0].to(device)), (*batch)[1].to(device));
      opt.zero_grad();
      loss.backward();
      opt.step();
    }
  }
  return sbn_state(net);
}

std::vector<torch::Tensor> sbn_fit(tnt::Model& model, torch::nn::Module& net, int epochs) {
  model.compile(tnt::CompileOptions()
                    .optimizer(tnt::optimizers::SGD(0.05, 0.9))
                    .loss(tnt::losses::SparseCategoricalCrossentropy()));
  testing::internal::CaptureStderr();
  model.fit(sbn_train_set(), tnt::FitOptions().epochs(epochs).verbose(0));
  const std::string log = testing::internal::GetCapturedStderr();
  // Micro-batches of 7 / N < 16 samples, but the statistics are global.
  EXPECT_EQ(log.find("BatchNorm layers"), std::string::npos) << log;
  return sbn_state(net);
}

TEST(SyncBatchNormMpi, DropInModuleTrainsLikeSerialBatchNorm) {
  torch::manual_seed(21);
  auto serial = std::make_shared<SerialNet>();
  torch::manual_seed(21);
  auto sync = std::make_shared<SyncNet>();
  tnt::Model model(sync);
  const auto want = sbn_serial(
      *serial, [&](torch::Tensor x) { return serial->forward(x); }, 2, model.device());
  EXPECT_LE(sbn_worst(sbn_fit(model, *sync, 2), want), 1e-5);
}

TEST(SyncBatchNormMpi, ConvertedSequentialTrainsLikeSerialBatchNorm) {
  torch::manual_seed(22);
  torch::nn::Sequential serial = sbn_sequential();
  torch::manual_seed(22);
  torch::nn::Sequential converted = sbn_sequential();
  EXPECT_EQ(tnt::nn::convert_sync_batchnorm(*converted), 2u);
  tnt::Model model(converted);
  const auto want = sbn_serial(
      *serial, [&](torch::Tensor x) { return serial->forward(x); }, 2, model.device());
  EXPECT_LE(sbn_worst(sbn_fit(model, *converted, 2), want), 1e-5);
}

TEST(SyncBatchNormMpi, RegistryLayerTrainsLikeSerialBatchNorm) {
  torch::manual_seed(23);
  L::Sequential serial = sbn_registry(false);
  torch::manual_seed(23);
  L::Sequential sync = sbn_registry(true);
  tnt::Model model(sync);
  const auto want = sbn_serial(
      *serial, [&](torch::Tensor x) { return serial->forward(x); }, 2, model.device());
  EXPECT_LE(sbn_worst(sbn_fit(model, *sync, 2), want), 1e-5);
  // Evaluation uses the running statistics: the serial network's result.
  serial->eval();
  const auto all = sbn_samples();
  const torch::Device device = model.device();
  const double loss =
      torch::nn::functional::cross_entropy(serial->forward(all[0].to(device)), all[1].to(device))
          .item<double>();
  EXPECT_NEAR(model.evaluate(sbn_train_set()).at("loss"), loss, 1e-5);
}

}  // namespace
