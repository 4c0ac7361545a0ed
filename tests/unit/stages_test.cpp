// Pipeline stages' pure parts (src/stages/): the rank layout, the stage
// schedules (checked by simulating every stage's actions with their
// dependencies: no stage waits forever, the bubble is the theory's, 1F1B
// holds at most P - s micro-batches), and the cuts of a Sequential.
#include <algorithm>
#include <cstdint>
#include <vector>

#include <gtest/gtest.h>

#include <tarantella/base/argument_error.h>

#include "stages/layout.h"
#include "stages/partition.h"
#include "stages/schedule.h"

namespace {

using tnt::stages::Action;
using tnt::stages::Schedule;

std::string stage_error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const tnt::ArgumentError& e) {
    // Without the "[tarantella rank r] " that the error's text starts with.
    const std::string what = e.what();
    const std::size_t end = what.rfind("[tarantella", 0) == 0 ? what.find("] ") : std::string::npos;
    return end == std::string::npos ? what : what.substr(end + 2);
  }
  return "(no ArgumentError)";
}

TEST(pipeline_layout, PipelinesAreConsecutiveRanksAndStagesStride) {
  const auto l = tnt::stages::stage_layout(8, 6, 4);
  EXPECT_EQ(l.stages, 4);
  EXPECT_EQ(l.replicas, 2);
  EXPECT_EQ(l.stage, 2);
  EXPECT_EQ(l.replica, 1);
  EXPECT_EQ(l.pipeline_ranks, (std::vector<int>{4, 5, 6, 7}));
  EXPECT_EQ(l.stage_ranks, (std::vector<int>{2, 6}));
  EXPECT_EQ(l.describe(), "stage 2 of 4, replica 1 of 2");
  const auto one = tnt::stages::stage_layout(3, 2, 1);  // no stages: data parallelism
  EXPECT_EQ(one.stage_ranks, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(one.pipeline_ranks, (std::vector<int>{2}));
  EXPECT_TRUE(one.first_stage() && one.last_stage());
}

TEST(pipeline_layout, RanksNotAMultipleOfTheStagesIsAnError) {
  EXPECT_EQ(stage_error_of([] { tnt::stages::stage_layout(4, 0, 3); }),
            "4 ranks cannot run 3 pipeline stages: the number of ranks must be a multiple of 3 "
            "(start 6 ranks, or choose a pipeline_stages that divides 4)");
  EXPECT_NE(stage_error_of([] { tnt::stages::stage_layout(4, 0, 0); }).find("at least 1, got 0"),
            std::string::npos);
}

// Runs every stage's actions, each as early as its stage and its inputs
// allow (a forward needs the previous stage's forward of that micro-batch;
// a backward the next stage's backward, or on the last stage its own
// forward). Returns the time each stage finished, or -1 for a stage that
// never could (a deadlock).
struct Simulation {
  std::vector<double> busy;  // per stage: time spent computing
  double makespan = 0;
  bool deadlock = false;
};

Simulation simulate_stages(Schedule schedule, int stages, int micro, double forward, double backward) {
  std::vector<std::vector<Action>> acts;
  for (int s = 0; s < stages; ++s) acts.push_back(tnt::stages::stage_actions(schedule, s, stages, micro));
  std::vector<std::vector<double>> f_done(stages, std::vector<double>(micro, -1));
  std::vector<std::vector<double>> b_done(stages, std::vector<double>(micro, -1));
  std::vector<std::size_t> next(stages, 0);
  std::vector<double> free_at(stages, 0);
  Simulation sim;
  sim.busy.assign(stages, 0);
  for (bool progress = true; progress;) {
    progress = false;
    for (int s = 0; s < stages; ++s) {
      if (next[s] == acts[s].size()) continue;
      const Action a = acts[s][next[s]];
      double ready = -1;
      if (a.kind == Action::forward) {
        ready = s == 0 ? 0 : f_done[s - 1][a.micro_batch];
      } else {
        ready = s == stages - 1 ? f_done[s][a.micro_batch] : b_done[s + 1][a.micro_batch];
      }
      if (ready < 0) continue;
      const double cost = a.kind == Action::forward ? forward : backward;
      const double end = std::max(ready, free_at[s]) + cost;
      (a.kind == Action::forward ? f_done : b_done)[s][a.micro_batch] = end;
      free_at[s] = end;
      sim.busy[s] += cost;
      ++next[s];
      progress = true;
    }
  }
  for (int s = 0; s < stages; ++s) sim.deadlock |= next[s] != acts[s].size();
  sim.makespan = *std::max_element(free_at.begin(), free_at.end());
  return sim;
}

TEST(pipeline_schedule, EveryStageFinishesAndTheBubbleIsTheTheorys) {
  for (Schedule schedule : {Schedule::one_f_one_b, Schedule::gpipe}) {
    for (int p : {1, 2, 3, 4}) {
      for (int m : {1, 2, 4, 8, 13}) {
        const Simulation sim = simulate_stages(schedule, p, m, 1.0, 1.0);
        ASSERT_FALSE(sim.deadlock) << to_string(schedule) << " P=" << p << " M=" << m;
        for (int s = 0; s < p; ++s) {
          const double idle = (sim.makespan - sim.busy[s]) / sim.makespan;
          EXPECT_NEAR(idle, tnt::stages::bubble_fraction(p, m), 1e-12)
              << to_string(schedule) << " P=" << p << " M=" << m << " stage " << s;
        }
      }
    }
  }
}

TEST(pipeline_schedule, OneFOneBHoldsAtMostPMinusSMicroBatchesAndGPipeHoldsAll) {
  for (int p : {2, 4}) {
    for (int s = 0; s < p; ++s) {
      const auto one = tnt::stages::stage_actions(Schedule::one_f_one_b, s, p, 8);
      EXPECT_EQ(tnt::stages::peak_in_flight(one), p - s) << "P=" << p << " stage " << s;
      EXPECT_EQ(tnt::stages::peak_in_flight(
                    tnt::stages::stage_actions(Schedule::gpipe, s, p, 8)), 8);
    }
  }
  // Both run each micro-batch's forward and backward once, backwards in order.
  const auto acts = tnt::stages::stage_actions(Schedule::one_f_one_b, 0, 3, 5);
  std::vector<int> backwards;
  for (const Action& a : acts) {
    if (a.kind == Action::backward) backwards.push_back(a.micro_batch);
  }
  EXPECT_EQ(backwards, (std::vector<int>{0, 1, 2, 3, 4}));
  EXPECT_EQ(acts.size(), 10u);
  // One stage, one micro-batch: a data-parallel step's forward, then backward.
  EXPECT_EQ(tnt::stages::stage_actions(Schedule::one_f_one_b, 0, 1, 1),
            (std::vector<Action>{{Action::forward, 0}, {Action::backward, 0}}));
}

TEST(pipeline_schedule, NamesDefaultsAndErrors) {
  EXPECT_EQ(tnt::stages::schedule_from_name("gpipe"), Schedule::gpipe);
  EXPECT_EQ(tnt::stages::schedule_from_name("1f1b"), Schedule::one_f_one_b);
  EXPECT_EQ(stage_error_of([] { tnt::stages::schedule_from_name("zb"); }),
            "schedule='zb' is not a pipeline schedule: use '1f1b' (the default, least memory) or "
            "'gpipe'");
  EXPECT_EQ(tnt::stages::default_micro_batches(1), 1);
  EXPECT_EQ(tnt::stages::default_micro_batches(4), 12);
  EXPECT_LE(tnt::stages::bubble_fraction(4, tnt::stages::default_micro_batches(4)), 0.2);
  EXPECT_EQ(stage_error_of([] { tnt::stages::check_micro_batches(8, 6); }),
            "micro_batches=8 would leave 2 of them empty: a replica gets 6 samples of each global "
            "batch; use at most 6 micro-batches or a larger batch size");
  EXPECT_NO_THROW(tnt::stages::check_micro_batches(6, 6));
}

TEST(pipeline_partition, BalancedCutsMinimiseTheLargestStage) {
  using tnt::stages::balanced_cuts;
  EXPECT_EQ(balanced_cuts({10, 10, 10, 10}, 2), (std::vector<int>{0, 2}));
  EXPECT_EQ(balanced_cuts({10, 10, 10, 10}, 4), (std::vector<int>{0, 1, 2, 3}));
  // One heavy layer gets a stage of its own.
  EXPECT_EQ(balanced_cuts({1, 1, 100, 1, 1}, 3), (std::vector<int>{0, 2, 3}));
  // Parameter-free layers (ReLU) stay with the layer before them.
  EXPECT_EQ(balanced_cuts({50, 0, 50, 0, 50, 0, 50, 0}, 2), (std::vector<int>{0, 4}));
  EXPECT_EQ(balanced_cuts({168, 0, 600, 0, 400, 0, 68}, 4), (std::vector<int>{0, 2, 4, 6}));
  // Of cuts with the same largest stage, the most even one.
  EXPECT_EQ(balanced_cuts({600, 100, 100, 100, 100}, 2), (std::vector<int>{0, 1}));
  EXPECT_EQ(balanced_cuts({5, 7}, 1), (std::vector<int>{0}));
  EXPECT_EQ(stage_error_of([] { balanced_cuts({1, 2, 3}, 4); }),
            "a Sequential of 3 layers cannot be cut into 4 pipeline stages: each stage needs at "
            "least one layer; use at most 3 stages, or split the layers into smaller ones");
}

TEST(pipeline_partition, SplitPointsMakeTheStagesOrSayWhatIsWrong) {
  using tnt::stages::cuts_at_split_points;
  // Linear, SplitPoint, ReLU, Linear, SplitPoint, Linear
  EXPECT_EQ(cuts_at_split_points({1, 4}, 6, 3), (std::vector<int>{0, 2, 5}));
  EXPECT_EQ(stage_error_of([] { cuts_at_split_points({1}, 6, 3); }),
            "the Sequential has 1 SplitPoint, which make 2 stages, but pipeline_stages=3: a "
            "model cut into 3 stages needs 2 SplitPoints (or none, to be cut automatically)");
  EXPECT_NE(stage_error_of([] { cuts_at_split_points({1, 2}, 6, 3); }).find("stage 1 of the Sequential "
                                                                      "would have no layer"),
            std::string::npos);
  EXPECT_NE(stage_error_of([] { cuts_at_split_points({0}, 4, 2); }).find("stage 0 of the Sequential would "
                                                                  "have no layer"),
            std::string::npos);
  EXPECT_NE(stage_error_of([] { cuts_at_split_points({3}, 4, 2); }).find("stage 1 of the Sequential would "
                                                                  "have no layer"),
            std::string::npos);
}

TEST(pipeline_partition, StageRangesLeaveTheSplitPointsOut) {
  std::vector<std::int64_t> per_stage;
  using Ranges = std::vector<std::pair<int, int>>;
  EXPECT_EQ(tnt::stages::stage_ranges({false, false, true, false, false}, {10, 0, 0, 20, 5}, 2,
                                      &per_stage),
            (Ranges{{0, 2}, {3, 5}}));
  EXPECT_EQ(per_stage, (std::vector<std::int64_t>{10, 25}));
  EXPECT_EQ(tnt::stages::stage_ranges({false, false, false, false}, {10, 10, 10, 10}, 2),
            (Ranges{{0, 2}, {2, 4}}));
  EXPECT_EQ(tnt::stages::describe_cut({{0, 2}, {3, 5}}, {10, 25}, {false, false, true, false, false}),
            "pipeline: 2 stages, cut at the SplitPoints: layers 0-1 (10 parameters), layers 3-4 "
            "(25 parameters)");
}

}  // namespace
