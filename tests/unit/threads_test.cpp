#include <gtest/gtest.h>

#include "base/threads.h"

namespace {

TEST(ThreadRule, CoresDividedByLocalRanksAtLeastOne) {
  tnt::Config c;
  EXPECT_EQ(tnt::detail::decide_num_threads(c, 16, 4), 4);
  EXPECT_EQ(tnt::detail::decide_num_threads(c, 2, 1), 2);
  EXPECT_EQ(tnt::detail::decide_num_threads(c, 2, 2), 1);
  EXPECT_EQ(tnt::detail::decide_num_threads(c, 2, 4), 1);  // oversubscribed
  EXPECT_EQ(tnt::detail::decide_num_threads(c, 7, 2), 3);
}

TEST(ThreadRule, ConfiguredCountWins) {
  tnt::Config c;
  c.num_threads = 5;
  EXPECT_EQ(tnt::detail::decide_num_threads(c, 2, 2), 5);
}

TEST(ThreadRule, AvailableCoresIsPositive) { EXPECT_GE(tnt::detail::available_cores(), 1); }

TEST(Blas, DetectsTheLibraryLibTorchUses) {
  const auto blas = tnt::detail::detect_blas();
  EXPECT_FALSE(blas.library.empty()) << "no library provides sgemm_";
}

}  // namespace
