// The auto-tuner's search (train/step/autotune.h) on made-up step times: which
// (threshold, overlap) it picks, in how many steps, that the slowest rank
// decides and every rank picks alike (threads as ranks), and that a plan
// differing between ranks is refused. That the choice leaves the trained
// weights bitwise alike is checked with real ranks (tests/mpi/autotune_test).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <mutex>

#include <tarantella/base/error.h>
#include <tarantella/comm/in_process.h>

#include "train/step/autotune.h"

namespace {

using tnt::AutoTuneOptions;
using tnt::AutoTuner;
using tnt::EngineSetting;
using tnt::comm::ProcessGroup;
using tnt::comm::run_in_process;

constexpr std::size_t KiB = 1024;

// Seconds of one step at a setting, on a rank, at the n-th step of the run.
using Cost = std::function<double(const EngineSetting&, int rank, int step)>;

struct Outcome {
  EngineSetting chosen;
  int steps = 0;
  std::vector<EngineSetting> tried;  // the setting of every step, in order
};

Outcome tune(const ProcessGroup& g, const AutoTuneOptions& options, const Cost& cost) {
  AutoTuner tuner(g, options);
  Outcome out;
  for (int step = 0; !tuner.done(); ++step) {
    if (step > 1000) throw std::runtime_error("the tuner never finished");
    out.tried.push_back(tuner.setting());
    tuner.record(cost(tuner.setting(), g.rank(), step));
  }
  out.chosen = tuner.setting();
  out.steps = tuner.steps();
  return out;
}

Outcome tune_alone(const AutoTuneOptions& options, const Cost& cost) {
  Outcome out;
  run_in_process(1, [&](const ProcessGroup& g) { out = tune(g, options, cost); });
  return out;
}

// A smooth cost: 10 ms plus a distance from the best threshold (in factors
// of 4), plus a penalty when overlap is on.
Cost bowl(std::size_t best_threshold, double overlap_penalty_s) {
  return [=](const EngineSetting& s, int, int) {
    const double a = std::log2(static_cast<double>(s.threshold_bytes) + 1.0);
    const double b = std::log2(static_cast<double>(best_threshold) + 1.0);
    return 0.010 + 0.0005 * std::abs(a - b) + (s.overlap ? overlap_penalty_s : 0.0);
  };
}

AutoTuneOptions options() {
  return AutoTuneOptions().start({32 * KiB, true}).warmup_steps(1).measured_steps(4);
}

TEST(AutoTuner, DefaultThresholdsCoverPerTensorToLargeBuckets) {
  const auto c = tnt::default_autotune_thresholds();
  EXPECT_EQ(c.front(), 0u);
  EXPECT_EQ(c.back(), std::size_t{16} << 20);
  EXPECT_TRUE(std::is_sorted(c.begin(), c.end()));
}

TEST(AutoTuner, PicksOverlapOffWhenItIsFasterThenTheBestThresholdForIt) {
  const Outcome o = tune_alone(options(), bowl(1024 * KiB, 0.002));
  EXPECT_EQ(o.chosen, (EngineSetting{1024 * KiB, false}));
  // Phase 1: the configured 32 KiB with overlap on, then off; phase 2: the
  // 7 default thresholds with overlap off. 9 trials of 1 + 4 steps.
  EXPECT_EQ(o.steps, 9 * 5);
  ASSERT_EQ(o.tried.size(), 45u);
  EXPECT_EQ(o.tried[0], (EngineSetting{32 * KiB, true}));
  EXPECT_EQ(o.tried[5], (EngineSetting{32 * KiB, false}));
  for (std::size_t i = 10; i < o.tried.size(); ++i) EXPECT_FALSE(o.tried[i].overlap) << i;
}

TEST(AutoTuner, KeepsOverlapOnWhenItIsFaster) {
  const Outcome o = tune_alone(options(), bowl(64 * KiB, -0.002));
  EXPECT_EQ(o.chosen, (EngineSetting{64 * KiB, true}));
}

TEST(AutoTuner, TheConfiguredThresholdIsACandidateAndIsNotTriedTwice) {
  // 64 KiB is configured and among the thresholds: 2 + 6 trials.
  const Outcome at_start =
      tune_alone(options().start({64 * KiB, true}), bowl(64 * KiB, 0.001));
  EXPECT_EQ(at_start.chosen, (EngineSetting{64 * KiB, false}));
  EXPECT_EQ(at_start.steps, 8 * 5);
  // 32 KiB is not among them, but fastest: phase 1's trial of it wins.
  const Outcome off_list = tune_alone(options(), bowl(32 * KiB, 0.001));
  EXPECT_EQ(off_list.chosen, (EngineSetting{32 * KiB, false}));
}

TEST(AutoTuner, KeepsTheUsersOverlapAndTunesOnlyTheThreshold) {
  // TNT_OVERLAP=false was set; overlap on would be faster, but is never tried.
  const Outcome o = tune_alone(options().start({32 * KiB, false}).tune_overlap(false),
                               bowl(256 * KiB, -0.005));
  EXPECT_EQ(o.chosen, (EngineSetting{256 * KiB, false}));
  EXPECT_EQ(o.steps, 7 * 5);
  for (const EngineSetting& s : o.tried) EXPECT_FALSE(s.overlap);
}

TEST(AutoTuner, OptionsFromConfigTuneOverlapOnlyWhenTheUserLeftItAlone) {
  tnt::Config c;
  c.autotune_log_path = "trials.csv";
  AutoTuneOptions o =
      AutoTuneOptions::from_engine(tnt::train::EngineOptions::from_config(c), 64 * KiB);
  EXPECT_TRUE(o.tune_overlap());
  EXPECT_EQ(o.start(), (EngineSetting{64 * KiB, true}));
  EXPECT_EQ(o.log_path(), "trials.csv");
  c.overlap = false;
  c.overlap_set = true;
  o = AutoTuneOptions::from_engine(tnt::train::EngineOptions::from_config(c), 0);
  EXPECT_FALSE(o.tune_overlap());
  EXPECT_EQ(o.start(), (EngineSetting{0, false}));
}

TEST(AutoTuner, OneSlowStepDoesNotDisqualifyASetting) {
  // 256 KiB is best, but one of its measured steps is hit by a 50 ms hiccup
  // (another process took the core): the median of the 4 ignores it.
  const Cost base = bowl(256 * KiB, 0.001);
  const Outcome o = tune_alone(options(), [&](const EngineSetting& s, int r, int step) {
    const bool hiccup = s == EngineSetting{256 * KiB, false} && step % 5 == 2;
    return base(s, r, step) + (hiccup ? 0.050 : 0.0);
  });
  EXPECT_EQ(o.chosen, (EngineSetting{256 * KiB, false}));
}

TEST(AutoTuner, TheSlowestRankDecidesAndEveryRankPicksTheSame) {
  // Ranks 0 and 1 alone would pick 0 (one allreduce per tensor) with
  // overlap on; rank 2 is slower at every setting (it shares its core with
  // the network), so its best, 4 MiB with overlap off, is the job's best.
  const int n = 3;
  std::vector<Outcome> got(n);
  run_in_process(n, [&](const ProcessGroup& g) {
    got[static_cast<std::size_t>(g.rank())] =
        tune(g, options(), [](const EngineSetting& s, int rank, int step) {
          if (rank != 2) return bowl(0, -0.001)(s, rank, step);
          return bowl(4096 * KiB, 0.005)(s, rank, step) + 0.015;
        });
  });
  for (int r = 0; r < n; ++r) {
    const Outcome& o = got[static_cast<std::size_t>(r)];
    EXPECT_EQ(o.chosen, (EngineSetting{4096 * KiB, false})) << "rank " << r;
    EXPECT_EQ(o.tried, got[0].tried) << "rank " << r << " ran other settings than rank 0";
  }
}

TEST(AutoTuner, APlanThatDiffersBetweenRanksIsRefusedOnEveryRank) {
  std::mutex m;
  std::vector<std::string> errors;
  run_in_process(2, [&](const ProcessGroup& g) {
    try {
      // As if TNT_OVERLAP were set on rank 1 only.
      AutoTuner tuner(g, options().tune_overlap(g.rank() == 0));
    } catch (const tnt::Error& e) {
      std::lock_guard<std::mutex> lock(m);
      errors.push_back(e.what());
    }
  });
  ASSERT_EQ(errors.size(), 2u);
  for (const std::string& e : errors) {
    EXPECT_NE(e.find("different plan"), std::string::npos) << e;
    EXPECT_NE(e.find("TNT_OVERLAP"), std::string::npos) << e;
  }
}

TEST(AutoTuner, RefusesAnEmptyPlan) {
  run_in_process(1, [](const ProcessGroup& g) {
    EXPECT_THROW(AutoTuner(g, options().thresholds({})), tnt::Error);
    EXPECT_THROW(AutoTuner(g, options().measured_steps(0)), tnt::Error);
  });
}

}  // namespace
