// Losses, metrics and schedules against values computed by hand.
#include <gtest/gtest.h>

#include <cmath>

#include <torch/torch.h>

#include <tarantella/callbacks/builtins.h>
#include <tarantella/keras/losses.h>
#include <tarantella/keras/metrics.h>
#include <tarantella/keras/schedules.h>
#include <tarantella/base/error.h>

namespace {

namespace L = tnt::losses;
namespace M = tnt::metrics;
namespace S = tnt::schedules;

double value(const M::Metric& m, const torch::Tensor& p, const torch::Tensor& t) {
  const torch::Tensor s = m.update(p, t);
  return m.result(std::vector<double>(s.data_ptr<double>(), s.data_ptr<double>() + s.numel()));
}

TEST(Losses, SparseCategoricalCrossentropyFromLogitsAndProbabilities) {
  const torch::Tensor logits = torch::tensor({{2.0, 0.0}, {0.0, 1.0}});
  const torch::Tensor labels = torch::tensor({0, 0});
  const double expected =
      (-std::log(std::exp(2.0) / (std::exp(2.0) + 1)) - std::log(1 / (1 + std::exp(1.0)))) / 2;
  EXPECT_NEAR(L::SparseCategoricalCrossentropy()(logits, labels).item<double>(), expected, 1e-6);
  const torch::Tensor probs = torch::softmax(logits, -1);
  EXPECT_NEAR(L::SparseCategoricalCrossentropy(L::LossOptions().from_logits(false))(probs, labels)
                  .item<double>(),
              expected, 1e-6);
}

TEST(Losses, CategoricalAndBinaryCrossentropy) {
  const torch::Tensor logits = torch::tensor({{2.0, 0.0}});
  EXPECT_NEAR(L::CategoricalCrossentropy()(logits, torch::tensor({{1.0, 0.0}})).item<double>(),
              std::log(1 + std::exp(-2.0)), 1e-6);
  const torch::Tensor z = torch::tensor({0.5});
  EXPECT_NEAR(L::BinaryCrossentropy()(z, torch::tensor({1.0})).item<double>(),
              std::log(1 + std::exp(-0.5)), 1e-6);
  EXPECT_NEAR(L::BinaryCrossentropy(L::LossOptions().from_logits(false))(torch::tensor({0.8}),
                                                                         torch::tensor({1.0}))
                  .item<double>(),
              -std::log(0.8), 1e-6);
}

TEST(Losses, RegressionLosses) {
  const torch::Tensor p = torch::tensor({1.0, 4.0}), t = torch::tensor({0.0, 1.0});
  EXPECT_NEAR(L::MeanSquaredError()(p, t).item<double>(), (1 + 9) / 2.0, 1e-9);
  EXPECT_NEAR(L::MeanAbsoluteError()(p, t).item<double>(), (1 + 3) / 2.0, 1e-9);
  // Huber, delta 1: 0.5 for |e| = 1, 3 - 0.5 for |e| = 3.
  EXPECT_NEAR(L::Huber()(p, t).item<double>(), (0.5 + 2.5) / 2.0, 1e-9);
}

TEST(Losses, ShapeMistakesNameBothShapes) {
  try {
    L::MeanSquaredError()(torch::zeros({2, 3}), torch::zeros({2}));
    FAIL();
  } catch (const tnt::Error& e) {
    EXPECT_NE(std::string(e.what()).find("[2, 3]"), std::string::npos) << e.what();
  }
}

TEST(Metrics, AccuraciesCountHits) {
  const torch::Tensor scores = torch::tensor({{0.1, 0.9}, {0.8, 0.2}, {0.3, 0.7}});
  EXPECT_DOUBLE_EQ(value(M::SparseCategoricalAccuracy(), scores, torch::tensor({1, 1, 1})), 2.0 / 3);
  EXPECT_DOUBLE_EQ(value(M::CategoricalAccuracy(), scores,
                         torch::tensor({{0.0, 1.0}, {1.0, 0.0}, {1.0, 0.0}})),
                   2.0 / 3);
  EXPECT_DOUBLE_EQ(value(M::Accuracy(), scores, torch::tensor({1, 0, 1})), 1.0);
  EXPECT_DOUBLE_EQ(value(M::BinaryAccuracy(), torch::tensor({0.7, 0.2, 0.6}),
                         torch::tensor({1.0, 0.0, 0.0})),
                   2.0 / 3);
  const torch::Tensor wide = torch::tensor({{0.1, 0.5, 0.4}, {0.6, 0.3, 0.1}});
  EXPECT_DOUBLE_EQ(value(M::TopKCategoricalAccuracy(2), wide, torch::tensor({2, 2})), 0.5);
}

TEST(Metrics, StateIsSummableSoGlobalValuesAreExact) {
  // Two "ranks" with 1 and 3 samples: the global accuracy is hits / 4, not
  // the mean of the two ranks' accuracies.
  const auto m = M::SparseCategoricalAccuracy();
  const torch::Tensor a = m.update(torch::tensor({{0.0, 1.0}}), torch::tensor({1}));
  const torch::Tensor b =
      m.update(torch::tensor({{1.0, 0.0}, {1.0, 0.0}, {1.0, 0.0}}), torch::tensor({1, 1, 0}));
  const torch::Tensor sum = a + b;
  EXPECT_DOUBLE_EQ(m.result({sum[0].item<double>(), sum[1].item<double>()}), 2.0 / 4);
}

TEST(Metrics, ErrorMetricsAndUserMetrics) {
  const torch::Tensor p = torch::tensor({1.0, 4.0}), t = torch::tensor({0.0, 1.0});
  EXPECT_DOUBLE_EQ(value(M::MeanSquaredError(), p, t), 5.0);
  EXPECT_DOUBLE_EQ(value(M::MeanAbsoluteError(), p, t), 2.0);
  const auto cubed = M::Metric::mean_of(
      "cubed", [](const torch::Tensor& p, const torch::Tensor& t) { return (p - t).pow(3); });
  EXPECT_DOUBLE_EQ(value(cubed, p, t), (1 + 27) / 2.0);
}

TEST(Schedules, ExponentialAndPiecewiseDecay) {
  EXPECT_DOUBLE_EQ(S::Constant(0.3)(1000), 0.3);
  EXPECT_NEAR(S::ExponentialDecay(0.1, 100, 0.5)(150), 0.1 * std::pow(0.5, 1.5), 1e-12);
  EXPECT_NEAR(S::ExponentialDecay(0.1, 100, 0.5, true)(150), 0.05, 1e-12);
  const auto pw = S::PiecewiseConstantDecay({10, 20}, {1.0, 0.5, 0.1});
  EXPECT_DOUBLE_EQ(pw(0), 1.0);
  EXPECT_DOUBLE_EQ(pw(10), 1.0);
  EXPECT_DOUBLE_EQ(pw(11), 0.5);
  EXPECT_DOUBLE_EQ(pw(20), 0.5);
  EXPECT_DOUBLE_EQ(pw(21), 0.1);
  EXPECT_THROW(S::PiecewiseConstantDecay({10}, {1.0}), tnt::Error);
}

TEST(Schedules, WarmUpAndLinearScaling) {
  const auto warm = S::WarmUp(S::Constant(1.0), 10);
  EXPECT_DOUBLE_EQ(warm(0), 0.0);
  EXPECT_DOUBLE_EQ(warm(5), 0.5);
  EXPECT_DOUBLE_EQ(warm(10), 1.0);
  // Base 0.1 for one rank, 4 ranks: 0.1 at step 0, rising to 0.4.
  const auto scaled = S::LinearScalingWarmUp(0.1, 4, 100);
  EXPECT_NEAR(scaled(0), 0.1, 1e-12);
  EXPECT_NEAR(scaled(50), 0.25, 1e-12);
  EXPECT_NEAR(scaled(100), 0.4, 1e-12);
  const auto decayed = S::LinearScalingWarmUp(0.1, 2, 10, S::ExponentialDecay(0.1, 10, 0.5));
  EXPECT_NEAR(decayed(20), 0.2 * 0.25, 1e-12);
}

// A full disk (/dev/full fails every write with ENOSPC) is an error naming
// the file, not rows lost behind an exit status 0.
TEST(CSVLogger, AWriteErrorIsAnErrorNamingTheFile) {
  tnt::callbacks::CSVLogger log("/dev/full");
  log.on_train_begin({});
  try {
    log.on_epoch_end(0, {{"loss", 0.5}});
    FAIL() << "no error for a row written to /dev/full";
  } catch (const tnt::Error& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("'/dev/full'"), std::string::npos) << message;
    EXPECT_NE(message.find("epoch 1"), std::string::npos) << message;
    EXPECT_NE(message.find("No space left on device"), std::string::npos) << message;
  }
}

}  // namespace
