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

#include "model/model_impl.h"
#include "tiny_training.h"
#include "train/autotune.h"
#include "train/engine_state.h"

namespace {

using tnt::AutoTuneOptions;
using tnt::EngineSetting;
using tnt::ModelInternals;
using tnt::train::state_of;

// 4 epochs of 7 steps: the tuned runs below need at most 2 + 3 of them.
std::vector<torch::Tensor> trained(const std::function<void(tnt::Model&)>& setup,
                                   std::optional<std::size_t> threshold = std::nullopt) {
  tnt::Model model(tnt_test::make_net());
  tnt::CompileOptions options = tnt_test::options();
  if (threshold) options.fusion_threshold_bytes(*threshold);
  model.compile(options);
  setup(model);
  model.fit(tnt_test::train_set(8, true), tnt::FitOptions().epochs(4).verbose(0));
  std::vector<torch::Tensor> w;
  for (const auto& [name, t] : model.named_parameters()) w.push_back(t.detach().clone());
  return w;
}

void fixed_overlap(tnt::Model& model, bool overlap) {
  state_of(ModelInternals::of(model)).override_setting(std::nullopt, overlap);
}

// A tuner of 1-step trials over the tiny network's useful thresholds
// (its 4 tensors are 448, 64, 256 and 16 bytes): one allreduce per
// tensor, two buckets, one bucket.
void tuned(tnt::Model& model, bool tune_overlap, std::vector<std::size_t> thresholds) {
  auto& s = state_of(ModelInternals::of(model));
  s.set_autotuner(std::make_shared<tnt::AutoTuner>(
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
  const auto on = trained([](tnt::Model& m) { fixed_overlap(m, true); });
  const auto off = trained([](tnt::Model& m) { fixed_overlap(m, false); });
  expect_bitwise_equal(on, off, "overlap off against on");
  // The tuner tries both at the default threshold, then keeps one.
  const auto tuned_run = trained([](tnt::Model& m) { tuned(m, true, {32 * 1024}); });
  expect_bitwise_equal(on, tuned_run, "overlap tuned against fixed");
}

TEST(AutoTune, TunedWeightsEqualFixedOnesWhateverTheThreshold) {
  const std::vector<std::size_t> thresholds{0, 300, 1 << 20};
  const auto reference = trained([](tnt::Model& m) { fixed_overlap(m, true); });
  const auto tuned_run = trained([&](tnt::Model& m) { tuned(m, true, thresholds); });
  std::vector<std::pair<std::string, std::vector<torch::Tensor>>> others{{"tuned", tuned_run}};
  for (std::size_t t : thresholds) {
    others.push_back({"threshold " + std::to_string(t) + ", overlap off",
                      trained([](tnt::Model& m) { fixed_overlap(m, false); }, t)});
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
  tnt::Model model(tnt_test::make_net());
  model.compile(tnt_test::options());
  tuned(model, true, {0, 300, 1 << 20});
  model.fit(tnt_test::train_set(8, true), tnt::FitOptions().epochs(1).verbose(0));
  auto& s = state_of(ModelInternals::of(model));
  ASSERT_TRUE(s.autotuner()->done());
  EXPECT_EQ(s.autotuner()->steps(), 5);  // 2 trials of overlap, 3 of thresholds
  const EngineSetting chosen = s.autotuner()->setting();
  EXPECT_EQ(s.threshold_override(), chosen.threshold_bytes);
  EXPECT_EQ(s.overlap_override(), chosen.overlap);
  // Every rank: the master's choice.
  torch::Tensor mine = torch::tensor(
      {static_cast<double>(chosen.threshold_bytes), chosen.overlap ? 1.0 : 0.0}, torch::kFloat64);
  torch::Tensor master = mine.clone();
  s.group().broadcast(master, 0);
  EXPECT_TRUE(torch::equal(mine, master)) << "rank " << tnt::get_rank() << " chose otherwise";
}

}  // namespace
