// The overlap measure behind the per-epoch "hidden behind backward" log
// (the timeline file itself is checked end to end by
// tests/mpi/check_timeline.py).
#include <gtest/gtest.h>

#include "train/observe/timeline.h"

namespace {

using Clock = tnt::Timeline::Clock;
using ms = std::chrono::milliseconds;

TEST(OverlapMeter, CountsOnlyTheCommunicationInsideBackward) {
  const Clock::time_point t0{};
  tnt::OverlapMeter m;
  EXPECT_EQ(m.fraction(), 1.0);  // nothing communicated: nothing exposed
  m.add(t0, t0 + ms(10), t0 + ms(2), t0 + ms(6));    // fully hidden: 4 of 4
  m.add(t0, t0 + ms(10), t0 + ms(8), t0 + ms(14));   // 2 of 6 hidden
  m.add(t0, t0 + ms(10), t0 + ms(12), t0 + ms(14));  // after backward: 0 of 2
  EXPECT_NEAR(m.total_s, 0.012, 1e-12);
  EXPECT_NEAR(m.hidden_s, 0.006, 1e-12);
  EXPECT_NEAR(m.fraction(), 0.5, 1e-12);
}

}  // namespace
