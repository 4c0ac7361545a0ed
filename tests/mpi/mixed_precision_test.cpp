// Mixed precision at N ranks: bfloat16 autocast on the model's device (the
// CPU, or a GPU where the launcher gave one), and dynamic loss scaling
// skipping an overflowing step on every rank together when only one rank's
// gradient overflowed.
#include <gtest/gtest.h>

#include <limits>
#include <memory>

#include "tiny_training.h"

namespace {

using namespace tnt_test;

tnt::CompileOptions mixed(bool scaling) {
  return options().mixed_precision(tnt::MixedPrecision::BFloat16).loss_scaling(scaling);
}

TEST(MixedPrecision, BFloat16ForwardRunsInBFloat16AndReturnsFloat32) {
  tnt::Model model{make_net()};
  model.compile(mixed(false));
  const torch::Tensor x = samples().take(16).batch(16).iterate(0).next()->at(0);
  const torch::Tensor low = model.forward({x});
  EXPECT_EQ(low.scalar_type(), torch::kFloat32) << "loss and metrics see float32";
  tnt::Model plain{make_net()};
  plain.compile(options());
  const torch::Tensor full = plain.forward({x});
  const double diff = (low - full).abs().max().item<double>();
  EXPECT_GT(diff, 0.0) << "bfloat16 rounding must show: autocast was not active";
  EXPECT_LT(diff, 0.05 * full.abs().max().item<double>()) << "but stay close to float32";
}

TEST(MixedPrecision, BFloat16TrainingFollowsFloat32) {
  tnt::Model low{make_net()};
  low.compile(mixed(false));
  const auto a = low.fit(train_set(8, true), tnt::FitOptions().epochs(4).verbose(0));
  tnt::Model full{make_net()};
  full.compile(options());
  const auto b = full.fit(train_set(8, true), tnt::FitOptions().epochs(4).verbose(0));
  const double la = a.history.at("loss").back(), lb = b.history.at("loss").back();
  EXPECT_LT(la, a.history.at("loss").front()) << "it learns";
  EXPECT_NEAR(la, lb, 0.05 * lb);
  EXPECT_EQ(low.skipped_steps(), 0);
  EXPECT_EQ(low.loss_scale(), 1.0) << "bfloat16 needs no loss scaling by default";
}

TEST(MixedPrecision, AnOverflowOnOneRankSkipsTheStepOnEveryRank) {
  // The last rank's loss is infinite at its third training step: its
  // gradient overflows, and with it every rank's summed gradient.
  const int victim = tnt::get_size() - 1;
  auto calls = std::make_shared<int>(0);
  tnt::losses::Loss poisoned("poisoned", [calls, victim](const torch::Tensor& out, const torch::Tensor& y) {
    torch::Tensor loss = torch::nn::functional::cross_entropy(out, y);
    if (tnt::get_rank() == victim && ++*calls == 3) loss = loss * std::numeric_limits<float>::infinity();
    return loss;
  });
  tnt::Model model{make_net()};
  model.compile(mixed(true).loss(poisoned));
  model.fit(train_set(8, false), tnt::FitOptions().epochs(1).steps_per_epoch(3).verbose(0));
  EXPECT_EQ(model.skipped_steps(), 1) << "rank " << tnt::get_rank();
  EXPECT_EQ(model.loss_scale(), 65536.0 / 2) << "halved on every rank";
  // Skipped means unchanged: the same as two steps without the third.
  tnt::Model two{make_net()};
  two.compile(mixed(true));
  two.fit(train_set(8, false), tnt::FitOptions().epochs(1).steps_per_epoch(2).verbose(0));
  const auto a = params_of(model), b = params_of(two);
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_TRUE(torch::isfinite(a[i]).all().item<bool>());
    EXPECT_TRUE(torch::equal(a[i], b[i])) << "parameter " << i << " changed in the skipped step";
    const torch::Tensor all = tnt::comm::allgather(a[i].unsqueeze(0).contiguous());
    for (int r = 1; r < tnt::get_size(); ++r) EXPECT_TRUE(torch::equal(all[r], all[0]));
  }
}

// float16 autocast needs a GPU: refused with the fix on the CPU, taken on a
// GPU (where the launcher gave the ranks one).
TEST(MixedPrecision, Float16OnTheCpuIsRefusedWithTheFix) {
  tnt::Model model{make_net()};
  if (model.device().is_cuda()) {
    EXPECT_NO_THROW(model.compile(options().mixed_precision(tnt::MixedPrecision::Float16)))
        << "float16 autocast refused on " << model.device();
    return;
  }
  try {
    model.compile(options().mixed_precision(tnt::MixedPrecision::Float16));
    ADD_FAILURE() << "compiled float16 autocast on the CPU";
  } catch (const tnt::Error& e) {
    EXPECT_NE(std::string(e.what()).find("use tnt::MixedPrecision::BFloat16 (Python: mixed_precision='bfloat16') on the CPU"), std::string::npos)
        << e.what();
  }
}

}  // namespace
