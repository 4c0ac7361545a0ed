// The straggler detector (train/straggler.h): which rank it names, against
// which reference, and when it stays silent.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

#include <tarantella/comm/in_process.h>

#include "train/straggler.h"
#include "train/straggler_monitor.h"
#include "train/timeline.h"

namespace {

using tnt::train::find_stragglers;
using tnt::train::RankStepTimes;
using tnt::train::StragglerRules;
using tnt::train::StragglerTracker;

std::vector<RankStepTimes> computes(const std::vector<double>& ms) {
  std::vector<RankStepTimes> out;
  for (double c : ms) out.push_back({c, 0.0});
  return out;
}

TEST(Straggler, SlowRankIsFoundWithTheOthersWait) {
  const std::vector<RankStepTimes> ranks = {{53, 32}, {85, 1}, {53, 30}, {52, 34}};
  const auto found = find_stragglers(ranks, StragglerRules());
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].rank, 1);
  EXPECT_DOUBLE_EQ(found[0].compute_ms, 85);
  EXPECT_DOUBLE_EQ(found[0].others_compute_ms, 53);  // median of 53, 53, 52
  EXPECT_DOUBLE_EQ(found[0].others_wait_ms, 32);     // mean of 32, 30, 34
}

// With 2 ranks the reference is the other rank; the fast one is never named.
TEST(Straggler, TwoRanksCompareWithTheOther) {
  const auto found = find_stragglers({{53, 32}, {85, 0.5}}, StragglerRules());
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].rank, 1);
  EXPECT_DOUBLE_EQ(found[0].others_compute_ms, 53);
  EXPECT_NEAR(found[0].ratio(), 85.0 / 53.0, 1e-12);
  EXPECT_TRUE(find_stragglers({{85, 0.5}, {53, 32}}, StragglerRules()).size() == 1u);
  EXPECT_EQ(find_stragglers({{85, 0.5}, {53, 32}}, StragglerRules())[0].rank, 0);
}

TEST(Straggler, NoiseWithinTheMarginIsNotReported) {
  EXPECT_TRUE(find_stragglers(computes({50, 59, 51, 55}), StragglerRules()).empty());
  EXPECT_TRUE(find_stragglers(computes({50, 60}), StragglerRules()).empty());  // exactly 20 %
  EXPECT_EQ(find_stragglers(computes({50, 60.5}), StragglerRules()).size(), 1u);
}

TEST(Straggler, AllEqualIsNotReported) {
  EXPECT_TRUE(find_stragglers(computes({40, 40, 40}), StragglerRules()).empty());
  EXPECT_TRUE(find_stragglers(computes({0, 0}), StragglerRules()).empty());
  EXPECT_TRUE(find_stragglers(computes({70}), StragglerRules()).empty());  // one rank
}

// The median of the OTHERS: the fast ranks are never pulled towards the slow
// one, and the slow one is not compared with a reference that contains it.
TEST(Straggler, FourRanksOneSlowUsesTheMedianOfTheOthers) {
  const auto found = find_stragglers(computes({10, 10, 30, 11}), StragglerRules());
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].rank, 2);
  EXPECT_DOUBLE_EQ(found[0].others_compute_ms, 10);  // median of 10, 10, 11
}

TEST(Straggler, SubMillisecondGapsAreJitter) {
  EXPECT_TRUE(find_stragglers(computes({0.5, 0.9}), StragglerRules()).empty());
  EXPECT_EQ(find_stragglers(computes({0.5, 0.9}), StragglerRules().min_gap_ms(0.1)).size(), 1u);
}

TEST(Straggler, ReportedAfterConsecutiveWindowsAndOnlyOnce) {
  StragglerTracker tracker{StragglerRules()};
  const auto slow = computes({50, 90});
  const auto even = computes({50, 50});
  EXPECT_TRUE(tracker.judge(slow).empty());  // one window could be a pause
  const auto second = tracker.judge(slow);
  ASSERT_EQ(second.size(), 1u);
  EXPECT_EQ(second[0].rank, 1);
  EXPECT_TRUE(tracker.judge(slow).empty());  // still slow: already said
  EXPECT_TRUE(tracker.judge(even).empty());
  EXPECT_TRUE(tracker.judge(slow).empty());  // a new run of slow windows
  EXPECT_EQ(tracker.judge(slow).size(), 1u);
}

TEST(Straggler, AnInterruptedRunOfSlowWindowsStartsOver) {
  StragglerTracker tracker{StragglerRules()};
  EXPECT_TRUE(tracker.judge(computes({50, 90})).empty());
  EXPECT_TRUE(tracker.judge(computes({50, 50})).empty());
  EXPECT_TRUE(tracker.judge(computes({50, 90})).empty());
  StragglerTracker at_once{StragglerRules().windows(1)};
  EXPECT_EQ(at_once.judge(computes({50, 90})).size(), 1u);
}

TEST(Straggler, MessageNamesRankHostRatioAndTheOthersWait) {
  tnt::train::Straggler s;
  s.rank = 1;
  s.compute_ms = 85;
  s.others_compute_ms = 53;
  s.others_wait_ms = 32;
  EXPECT_EQ(tnt::train::straggler_message(s, "h1", 100),
            "rank 1 (host h1) is a straggler: its compute is 1.6x the others' over the last 100 "
            "steps (85 ms vs 53 ms; they wait 32 ms per step for it)");
  EXPECT_EQ(tnt::train::straggler_message(s, "", 10).rfind("rank 1 is a straggler", 0), 0u);
}

// The monitor on 3 in-process ranks: windows close on the same step on
// every rank, with every rank's means, and the timeline gets each rank's
// counter.
TEST(StragglerMonitor, GathersEveryRanksMeansOncePerWindow) {
  using std::chrono::milliseconds;
  const std::string trace = (std::filesystem::temp_directory_path() /
                             ("tnt_straggler_" + std::to_string(::getpid()) + ".json"))
                                .string();
  std::mutex mutex;
  std::vector<std::vector<tnt::train::StepTimesWindow>> seen(3);
  tnt::comm::run_in_process(3, [&](const tnt::comm::ProcessGroup& g) {
    tnt::Timeline timeline(g, trace);
    tnt::train::StragglerMonitor monitor(g, 4, &timeline);
    const int compute = g.rank() == 2 ? 30 : 10;
    const int wait = g.rank() == 2 ? 0 : 20;
    std::vector<tnt::train::StepTimesWindow> windows;
    for (int step = 0; step < 9; ++step) {
      if (auto w = monitor.record(milliseconds(compute), milliseconds(wait))) windows.push_back(*w);
    }
    timeline.write();
    std::lock_guard<std::mutex> lock(mutex);
    seen[static_cast<std::size_t>(g.rank())] = windows;
  });
  for (const auto& windows : seen) {
    ASSERT_EQ(windows.size(), 2u);  // steps 4 and 8; step 9 is in an open window
    EXPECT_EQ(windows[0].step, 4);
    EXPECT_EQ(windows[1].step, 8);
    ASSERT_EQ(windows[1].ranks.size(), 3u);
    EXPECT_EQ(windows[1].steps, 4);
    EXPECT_DOUBLE_EQ(windows[1].ranks[0].compute_ms, 10);
    EXPECT_DOUBLE_EQ(windows[1].ranks[0].wait_ms, 20);
    EXPECT_DOUBLE_EQ(windows[1].ranks[2].compute_ms, 30);
    EXPECT_DOUBLE_EQ(windows[1].ranks[2].wait_ms, 0);
  }
  std::stringstream text;
  text << std::ifstream(trace).rdbuf();
  std::filesystem::remove(trace);
  for (int r = 0; r < 3; ++r) {
    const std::string counter = "\"name\":\"step times (ms)\",\"ph\":\"C\"";
    const std::string args =
        r == 2 ? "{\"compute\":30.0,\"wait\":0.0}" : "{\"compute\":10.0,\"wait\":20.0}";
    EXPECT_NE(text.str().find(counter), std::string::npos) << text.str();
    EXPECT_NE(text.str().find("\"pid\":" + std::to_string(r) + ",\"args\":" + args),
              std::string::npos)
        << "rank " << r << "'s counter is missing:\n"
        << text.str();
  }
  // The report (rank 2, confirmed in the second window) marks the master's track.
  EXPECT_NE(text.str().find("rank 2 (host "), std::string::npos) << text.str();
}

}  // namespace
