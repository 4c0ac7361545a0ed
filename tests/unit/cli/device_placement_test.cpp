// The GPU rule of the Tarantella manual, and explicit requests (-x TNT_USE_GPU).
#include "plan/device_placement.h"

#include "common/launcher_error.h"
#include "probe/node_facts.h"
#include "test_support.h"

namespace tnt::cli {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;

// nvidia-smi lists every GPU of the node; the ranks see those that
// CUDA_VISIBLE_DEVICES leaves (a Slurm job's share, or the user's choice),
// and one rank per GPU means one per GPU they can see.
TEST(DevicePlacement, VisibleGpusFollowCudaVisibleDevices) {
  EXPECT_EQ(visible_gpu_count(8, nullptr), 8);
  EXPECT_EQ(visible_gpu_count(8, "2,3"), 2);
  EXPECT_EQ(visible_gpu_count(8, " 5 "), 1);
  EXPECT_EQ(visible_gpu_count(8, "GPU-6f1c0d3e,GPU-0a9b"), 2);
  EXPECT_EQ(visible_gpu_count(8, ""), 0);
  EXPECT_EQ(visible_gpu_count(8, "0,-1,2"), 1);  // CUDA stops at the invalid entry
  EXPECT_EQ(visible_gpu_count(2, "0,1,2,3"), 2);
  EXPECT_EQ(visible_gpu_count(0, "0"), 0);
}

TEST(DevicePlacement, OneRankPerGpuByDefault) {
  const auto p = place_ranks(std::nullopt, false, 4);
  EXPECT_EQ(p.ranks_per_node, 4);
  EXPECT_TRUE(p.use_gpu);
  EXPECT_THAT(p.warning, IsEmpty());
}

// Manual §6.2: nothing GPU-related was asked for and there is no GPU, so
// the CPU run is silent (no GPU warning nobody asked for).
TEST(DevicePlacement, NoGpuStartsOneCpuRankSilently) {
  const auto p = place_ranks(std::nullopt, false, 0);
  EXPECT_EQ(p.ranks_per_node, 1);
  EXPECT_FALSE(p.use_gpu);
  EXPECT_THAT(p.warning, IsEmpty());
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

TEST(DevicePlacement, RequestedRanksWithoutGpusAreSilent) {
  const auto p = place_ranks(3, false, 0);
  EXPECT_EQ(p.ranks_per_node, 3);
  EXPECT_FALSE(p.use_gpu);
  EXPECT_THAT(p.warning, IsEmpty());
}

std::string refusal(std::optional<int> ranks, bool no_gpu, int gpus,
                    const std::optional<std::string>& request, int ranks_per_gpu = 1) {
  try {
    place_ranks(ranks, no_gpu, gpus, request, ranks_per_gpu);
  } catch (const LauncherError& e) {
    EXPECT_EQ(e.exit_code(), kUsageExitCode);
    return e.what();
  }
  ADD_FAILURE() << "TNT_USE_GPU=" << request.value_or("(unset)") << " with " << gpus
                << " GPUs and --ranks-per-gpu " << ranks_per_gpu << " was accepted";
  return "";
}

TEST(DevicePlacement, ExplicitGpuRequestWithoutGpuIsAnError) {
  for (const std::optional<int> ranks : {std::optional<int>(), std::optional<int>(2)}) {
    const std::string message = refusal(ranks, false, 0, "true");
    EXPECT_THAT(message, HasSubstr("-x TNT_USE_GPU=true asks for a GPU on every rank, but this "
                                   "node has no GPU"));
    EXPECT_THAT(message, HasSubstr("drop -x TNT_USE_GPU=true to train on the CPU"));
  }
  EXPECT_THAT(refusal(1, false, 0, " Yes "), HasSubstr("TNT_USE_GPU= Yes "));
}

TEST(DevicePlacement, ExplicitGpuRequestNeedsAGpuPerRank) {
  EXPECT_THAT(refusal(3, false, 2, "1"),
              HasSubstr("3 ranks per node are requested and this node has 2 GPUs: start at most 2 "
                        "ranks per node"));
}

TEST(DevicePlacement, ExplicitGpuRequestContradictsNoGpu) {
  EXPECT_THAT(refusal(2, true, 4, "on"), HasSubstr("and --no-gpu for none: drop one of the two"));
}

TEST(DevicePlacement, GpuRequestMustBeABoolean) {
  EXPECT_THAT(refusal(2, false, 4, "maybe"),
              HasSubstr("-x TNT_USE_GPU='maybe' is not a boolean: use true"));
}

TEST(DevicePlacement, ExplicitRequestsThatCanBeMetGoAhead) {
  const auto gpus = place_ranks(std::nullopt, false, 4, std::string("TRUE"));
  EXPECT_EQ(gpus.ranks_per_node, 4);
  EXPECT_TRUE(gpus.use_gpu);
  EXPECT_THAT(gpus.warning, IsEmpty());
  const auto cpu = place_ranks(2, false, 4, std::string("false"));
  EXPECT_EQ(cpu.ranks_per_node, 2);
  EXPECT_FALSE(cpu.use_gpu);
  EXPECT_THAT(cpu.warning, IsEmpty());
  const auto automatic = place_ranks(5, false, 4, std::string("auto"));
  EXPECT_FALSE(automatic.use_gpu);
  EXPECT_THAT(automatic.warning, HasSubstr("5 ranks per node requested"));
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

// --ranks-per-gpu K: K ranks share each GPU on purpose.

TEST(DevicePlacement, RanksPerGpuMultipliesTheDefaultRankCount) {
  const auto p = place_ranks(std::nullopt, false, 1, std::nullopt, 2);
  EXPECT_EQ(p.ranks_per_node, 2);
  EXPECT_TRUE(p.use_gpu);
  EXPECT_EQ(p.ranks_per_gpu, 2);
  EXPECT_THAT(p.warning, IsEmpty());
  EXPECT_EQ(place_ranks(std::nullopt, false, 4, std::nullopt, 3).ranks_per_node, 12);
}

TEST(DevicePlacement, RanksPerGpuAllowsUpToItsCapacity) {
  const auto p = place_ranks(3, false, 2, std::nullopt, 2);
  EXPECT_EQ(p.ranks_per_node, 3);
  EXPECT_TRUE(p.use_gpu);
  // An explicit demand is met by sharing too.
  EXPECT_TRUE(place_ranks(4, false, 2, std::string("true"), 2).use_gpu);
  EXPECT_THAT(refusal(5, false, 2, std::string("true"), 2),
              HasSubstr("this node has 2 GPUs x 2 ranks each (--ranks-per-gpu 2): start at most "
                        "4 ranks per node"));
}

// Sharing was asked for: more ranks than the shared GPUs hold, or no GPU
// at all, is refused rather than quietly run on the CPU.
TEST(DevicePlacement, RanksPerGpuBeyondCapacityOrWithoutGpusIsRefused) {
  EXPECT_THAT(refusal(5, false, 2, std::nullopt, 2),
              HasSubstr("5 ranks per node requested, but this node has 2 GPUs x 2 ranks each"));
  EXPECT_THAT(refusal(2, false, 0, std::nullopt, 2),
              HasSubstr("--ranks-per-gpu 2 shares GPUs between ranks, but this node has no GPU"));
  EXPECT_THAT(refusal(2, true, 4, std::nullopt, 2),
              HasSubstr("--no-gpu runs every rank on the CPU"));
  EXPECT_THAT(refusal(2, false, 4, std::string("false"), 2),
              HasSubstr("-x TNT_USE_GPU=false runs every rank on the CPU: drop one of the two"));
  EXPECT_THAT(refusal(2, false, 4, std::nullopt, 0), HasSubstr("must be at least 1"));
}

TEST(DevicePlacement, TheWarningAboutTooFewGpusSuggestsSharing) {
  EXPECT_THAT(place_ranks(3, false, 2).warning, HasSubstr("--ranks-per-gpu K to share them"));
}

TEST(DevicePlacement, DescribeDeviceNamesTheSharing) {
  EXPECT_EQ(describe_device(false, 1), "CPU");
  EXPECT_EQ(describe_device(true, 1), "GPU (one GPU per rank)");
  EXPECT_EQ(describe_device(true, 2),
            "GPU (2 ranks per GPU, collectives staged through host memory over MPI)");
}

}  // namespace

}  // namespace tnt::cli
