// Auto-tuning (fusion threshold and overlap on/off) does not change the
// trained weights, whatever it picks, on real ranks. The tuned run passes
// through every setting of its plan while training (one step each here),
// and ends on one of them; it is compared with fixed runs of the extremes.
// Overlap only moves when a bucket's allreduce starts: bitwise equal at any
// rank count. Bucket boundaries: bitwise equal at 1 and 2 ranks (a + b is
// exact); at 3+ MPI's per-element summation order may follow them, so there
// the test asks for agreement to rounding only.
#include <gtest/gtest.h>

#include <functional>

#include "../support/test_host.h"
#include "tiny_training.h"
#include "train/step/autotune.h"
#include "train/engine/engine_state.h"
#include "train/loop/fit_loop.h"

namespace {

using tnt::AutoTuneOptions;
using tnt::EngineSetting;
using tnt::train::EngineState;

// The engine state that the loops run on, over the world, with the run's
// configuration (as tnt::Model makes its engine).
std::unique_ptr<EngineState> engine() {
  return std::make_unique<EngineState>(
      tnt::make_adapter(tnt_test::make_net()), tnt::world(),
      tnt::train::EngineOptions::from_config(tnt::current_config()));
}

// 4 epochs of 7 steps: the tuned runs below need at most 2 + 3 of them.
std::vector<torch::Tensor> trained(const std::function<void(EngineState&)>& setup,
                                   std::optional<std::size_t> threshold = std::nullopt) {
  const auto e = engine();
  tnt_test::TestHostOf<EngineState> host(*e);
  tnt::CompileOptions options = tnt_test::options();
  if (threshold) options.fusion_threshold_bytes(*threshold);
  e->compile(options);
  setup(*e);
  tnt::train::fit(e->loop_context("fit()"), tnt_test::train_set(8, true), tnt::FitOptions().epochs(4).verbose(0), {&host, nullptr});
  return tnt_test::TestHostOf<EngineState>::weights_of(*e);
}

void fixed_overlap(EngineState& e, bool overlap) {
  e.gradients().override_setting(std::nullopt, overlap);
}

// A tuner of 1-step trials over the tiny network's useful thresholds
// (its 4 tensors are 448, 64, 256 and 16 bytes): one allreduce per
// tensor, two buckets, one bucket.
void tuned(EngineState& s, bool tune_overlap, std::vector<std::size_t> thresholds) {
  s.gradients().set_autotuner(std::make_shared<tnt::AutoTuner>(
      s.group(), AutoTuneOptions()
                   .thresholds(std::move(thresholds))
                   .start({32 * 1024, true})
                   .tune_overlap(tune_overlap)
                   .warmup_steps(0)
                   .measured_steps(1)));
}

void expect_bitwise_equal(const std::vector<torch::Tensor>& a, const std::vector<torch::Tensor>& b,
                          const std::string& what) {
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_TRUE(torch::equal(a[i], b[i]))
        << what << ": tensor " << i << " differs by up to "
        << (a[i] - b[i]).abs().max().item<double>() << " at " << tnt::get_size() << " ranks";
  }
}

TEST(AutoTune, OverlapOnOrOffGivesBitwiseTheSameWeights) {
  const auto on = trained([](EngineState& m) { fixed_overlap(m, true); });
  const auto off = trained([](EngineState& m) { fixed_overlap(m, false); });
  expect_bitwise_equal(on, off, "overlap off against on");
  // The tuner tries both at the default threshold, then keeps one.
  const auto tuned_run = trained([](EngineState& m) { tuned(m, true, {32 * 1024}); });
  expect_bitwise_equal(on, tuned_run, "overlap tuned against fixed");
}

TEST(AutoTune, TunedWeightsEqualFixedOnesWhateverTheThreshold) {
  const std::vector<std::size_t> thresholds{0, 300, 1 << 20};
  const auto reference = trained([](EngineState& m) { fixed_overlap(m, true); });
  const auto tuned_run = trained([&](EngineState& m) { tuned(m, true, thresholds); });
  std::vector<std::pair<std::string, std::vector<torch::Tensor>>> others{{"tuned", tuned_run}};
  for (std::size_t t : thresholds) {
    others.push_back({"threshold " + std::to_string(t) + ", overlap off",
                      trained([](EngineState& m) { fixed_overlap(m, false); }, t)});
  }
  for (const auto& [what, w] : others) {
    if (tnt::get_size() <= 2) {
      expect_bitwise_equal(reference, w, what);
    } else {
      EXPECT_LE(tnt_test::max_rel_diff(reference, w), 1e-6) << what;
    }
  }
}

TEST(AutoTune, TheChosenSettingIsTheEngineInUseAndAlikeOnEveryRank) {
  const auto e = engine();
  tnt_test::TestHostOf<EngineState> host(*e);
  e->compile(tnt_test::options());
  tuned(*e, true, {0, 300, 1 << 20});
  tnt::train::fit(e->loop_context("fit()"), tnt_test::train_set(8, true), tnt::FitOptions().epochs(1).verbose(0), {&host, nullptr});
  const tnt::train::GradientExchange& s = e->gradients();
  ASSERT_TRUE(s.autotuner()->done());
  EXPECT_EQ(s.autotuner()->steps(), 5);  // 2 trials of overlap, 3 of thresholds
  const EngineSetting chosen = s.autotuner()->setting();
  EXPECT_EQ(s.threshold_override(), chosen.threshold_bytes);
  EXPECT_EQ(s.overlap_override(), chosen.overlap);
  // Every rank: the master's choice.
  torch::Tensor mine = torch::tensor(
      {static_cast<double>(chosen.threshold_bytes), chosen.overlap ? 1.0 : 0.0}, torch::kFloat64);
  torch::Tensor master = mine.clone();
  e->group().broadcast(master, 0);
  EXPECT_TRUE(torch::equal(mine, master)) << "rank " << tnt::get_rank() << " chose otherwise";
}

}  // namespace
