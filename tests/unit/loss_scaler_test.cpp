// The dynamic loss scaler's decisions, on the CPU: the fused finiteness
// check (one reduction for all gradients), the skip that clears every
// gradient, and the unscale that divides them all.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include <torch/torch.h>

#include "train/step/mixed_precision.h"

namespace {

std::vector<torch::Tensor> scaler_test_params(std::vector<torch::Tensor> grads) {
  std::vector<torch::Tensor> params;
  for (auto& g : grads) {
    auto p = torch::zeros_like(g).requires_grad_(true);
    p.mutable_grad() = g;
    params.push_back(p);
  }
  return params;
}

TEST(AllFinite, OneNonFiniteElementAnywhereIsFound) {
  using tnt::train::all_finite;
  EXPECT_TRUE(all_finite({}));
  EXPECT_TRUE(all_finite({torch::ones({3}), torch::zeros({2, 2}, torch::kFloat64)}));
  auto late = torch::ones({1000});
  late[999] = std::numeric_limits<float>::infinity();
  EXPECT_FALSE(all_finite({torch::ones({3}), late}));
  auto nan = torch::ones({2, 2}, torch::kBFloat16);
  nan[1][0] = std::nan("");
  EXPECT_FALSE(all_finite({nan, torch::ones({3})}));
  EXPECT_TRUE(all_finite({torch::empty({0})}));
}

TEST(LossScaler, FiniteGradientsAreDividedByTheScale) {
  tnt::train::LossScaler scaler(8.0, /*growth_interval=*/2);
  auto params = scaler_test_params({torch::full({4}, 8.0), torch::full({2}, -16.0, torch::kFloat64)});
  ASSERT_TRUE(scaler.unscale_or_skip(params));
  EXPECT_TRUE(torch::equal(params[0].grad(), torch::full({4}, 1.0)));
  EXPECT_TRUE(torch::equal(params[1].grad(), torch::full({2}, -2.0, torch::kFloat64)));
  EXPECT_EQ(scaler.scale(), 8.0);
  auto again = scaler_test_params({torch::full({4}, 8.0)});
  ASSERT_TRUE(scaler.unscale_or_skip(again));
  EXPECT_EQ(scaler.scale(), 16.0);  // grown after growth_interval good steps
}

TEST(LossScaler, AnOverflowSkipsTheStepClearsEveryGradientAndHalvesTheScale) {
  tnt::train::LossScaler scaler(1024.0);
  auto bad = torch::ones({3});
  bad[1] = std::numeric_limits<float>::infinity();
  auto params = scaler_test_params({torch::ones({5}), bad});
  EXPECT_FALSE(scaler.unscale_or_skip(params));
  for (const auto& p : params) EXPECT_FALSE(p.grad().defined());
  EXPECT_EQ(scaler.scale(), 512.0);
  EXPECT_EQ(scaler.skipped(), 1);
}

TEST(LossScaler, TheRanksVerdictOverridesThisRanks) {
  // Another rank overflowed: this rank's finite gradients are skipped too.
  tnt::train::LossScaler scaler(4.0);
  auto params = scaler_test_params({torch::ones({2})});
  bool asked = false;
  EXPECT_FALSE(scaler.unscale_or_skip(params, [&](bool mine) {
    asked = true;
    EXPECT_TRUE(mine);
    return false;
  }));
  EXPECT_TRUE(asked);
  EXPECT_FALSE(params[0].grad().defined());
}

}  // namespace
