// The GPU rule of the Tarantella manual.
#include "device_placement.h"

#include "test_support.h"

namespace tnt::cli {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;

TEST(DevicePlacement, OneRankPerGpuByDefault) {
  const auto p = place_ranks(std::nullopt, false, 4);
  EXPECT_EQ(p.ranks_per_node, 4);
  EXPECT_TRUE(p.use_gpu);
  EXPECT_THAT(p.warning, IsEmpty());
}

TEST(DevicePlacement, NoGpuWarnsAndStartsOneCpuRank) {
  const auto p = place_ranks(std::nullopt, false, 0);
  EXPECT_EQ(p.ranks_per_node, 1);
  EXPECT_FALSE(p.use_gpu);
  EXPECT_THAT(p.warning, HasSubstr("no GPU found; starting 1 rank per node on the CPU"));
}

TEST(DevicePlacement, RequestedRanksWithinGpuCountUseGpus) {
  const auto p = place_ranks(2, false, 4);
  EXPECT_EQ(p.ranks_per_node, 2);
  EXPECT_TRUE(p.use_gpu);
  EXPECT_THAT(p.warning, IsEmpty());
}

TEST(DevicePlacement, MoreRanksThanGpusWarnsAndUsesTheCpu) {
  const auto p = place_ranks(5, false, 4);
  EXPECT_EQ(p.ranks_per_node, 5);
  EXPECT_FALSE(p.use_gpu);
  EXPECT_THAT(p.warning, HasSubstr("5 ranks per node requested but this node has 4 GPUs"));
  EXPECT_THAT(p.warning, HasSubstr("CPU"));
}

TEST(DevicePlacement, RequestedRanksWithoutGpusWarn) {
  const auto p = place_ranks(3, false, 0);
  EXPECT_EQ(p.ranks_per_node, 3);
  EXPECT_FALSE(p.use_gpu);
  EXPECT_THAT(p.warning, HasSubstr("no GPU found; starting 3 ranks per node on the CPU"));
}

TEST(DevicePlacement, NoGpuFlagIsSilentWithOrWithoutGpus) {
  for (int gpus : {0, 4}) {
    const auto defaulted = place_ranks(std::nullopt, true, gpus);
    EXPECT_EQ(defaulted.ranks_per_node, 1);
    EXPECT_FALSE(defaulted.use_gpu);
    EXPECT_THAT(defaulted.warning, IsEmpty());
    const auto requested = place_ranks(3, true, gpus);
    EXPECT_EQ(requested.ranks_per_node, 3);
    EXPECT_FALSE(requested.use_gpu);
    EXPECT_THAT(requested.warning, IsEmpty());
  }
}

}  // namespace
}  // namespace tnt::cli
