// The thread rule: an equal share of the node's cores per rank, at least 1.
#include "rank/thread_rule.h"

#include <gtest/gtest.h>

namespace tnt::cli {
namespace {

TEST(ThreadRule, SharesCoresEquallyRoundingDown) {
  EXPECT_EQ(threads_per_rank(2, 1), 2);
  EXPECT_EQ(threads_per_rank(2, 2), 1);
  EXPECT_EQ(threads_per_rank(16, 4), 4);
  EXPECT_EQ(threads_per_rank(7, 2), 3);
}

TEST(ThreadRule, NeverBelowOneThread) {
  EXPECT_EQ(threads_per_rank(2, 3), 1);
  EXPECT_EQ(threads_per_rank(0, 1), 1);
}

TEST(ThreadRule, ZeroRanksCountsAsOne) { EXPECT_EQ(threads_per_rank(4, 0), 4); }

}  // namespace
}  // namespace tnt::cli
