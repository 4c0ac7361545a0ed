// Placement inside a Slurm allocation: the allocation by default, -n and
// --n-per-node narrowing it, GPUs, and requests beyond it.
#include "plan/allocation_placement.h"

#include "test_support.h"

namespace tnt::cli {
namespace {

using ::testing::ElementsAre;
using testing::error_of;
using ::testing::HasSubstr;

SlurmAllocation job(std::vector<int> tasks, std::string tasks_text) {
  SlurmAllocation a;
  a.job_id = "42";
  for (std::size_t i = 0; i < tasks.size(); ++i) a.hosts.push_back("n" + std::to_string(i + 1));
  a.tasks_per_node = std::move(tasks);
  a.tasks_per_node_text = std::move(tasks_text);
  return a;
}

AllocationRequest with_n(int n) {
  AllocationRequest r;
  r.total_ranks = n;
  return r;
}
AllocationRequest per_node(int k) {
  AllocationRequest r;
  r.ranks_per_node = k;
  return r;
}

TEST(AllocationPlacement, ByDefaultEveryTaskOfTheAllocation) {
  const auto p = place_in_allocation(job({2, 1}, "2,1"), {});
  EXPECT_THAT(p.hosts, ElementsAre(HostRanks{"n1", 2}, HostRanks{"n2", 1}));
  EXPECT_EQ(p.total_ranks(), 3);
  EXPECT_FALSE(p.use_gpu);
  EXPECT_FALSE(p.uniform_ranks_per_node());
}

TEST(AllocationPlacement, MinusNFillsHostsInOrderAndDropsUnusedOnes) {
  EXPECT_THAT(place_in_allocation(job({2, 2}, "2(x2)"), with_n(3)).hosts,
              ElementsAre(HostRanks{"n1", 2}, HostRanks{"n2", 1}));
  EXPECT_THAT(place_in_allocation(job({2, 2}, "2(x2)"), with_n(2)).hosts,
              ElementsAre(HostRanks{"n1", 2}));
  EXPECT_THAT(place_in_allocation(job({2, 1}, "2,1"), with_n(3)).hosts,
              ElementsAre(HostRanks{"n1", 2}, HostRanks{"n2", 1}));
}

TEST(AllocationPlacement, MinusNBeyondTheAllocationNamesTheNumbers) {
  EXPECT_EQ(error_of([] {
              place_in_allocation(job({2, 1}, "2,1"), with_n(4));
            }),
            "-n 4 is more than the 3 tasks of Slurm job 42 (2 on n1, 1 on n2; "
            "SLURM_TASKS_PER_NODE=2,1): give -n 3 or less, or ask Slurm for more tasks "
            "(sbatch/salloc --ntasks or --ntasks-per-node)");
}

TEST(AllocationPlacement, PerNodeNarrowsEveryHost) {
  const auto p = place_in_allocation(job({4, 4}, "4(x2)"), per_node(2));
  EXPECT_THAT(p.hosts, ElementsAre(HostRanks{"n1", 2}, HostRanks{"n2", 2}));
  EXPECT_EQ(p.uniform_ranks_per_node(), 2);
}

TEST(AllocationPlacement, PerNodeBeyondTheSmallestHostIsAnError) {
  EXPECT_EQ(error_of([] {
              place_in_allocation(job({2, 1}, "2,1"), per_node(2));
            }),
            "--n-per-node 2 is more than Slurm job 42 allows on host n2 (1 task; "
            "SLURM_TASKS_PER_NODE=2,1): give --n-per-node 1 or less, or ask Slurm for more "
            "tasks (sbatch/salloc --ntasks or --ntasks-per-node)");
}

TEST(AllocationPlacement, GpusOfTheJobSetTheRanksPerNode) {
  SlurmAllocation a = job({1, 1}, "1(x2)");
  a.gpus_per_node = 4;
  const auto p = place_in_allocation(a, {});
  EXPECT_TRUE(p.use_gpu);
  EXPECT_THAT(p.hosts, ElementsAre(HostRanks{"n1", 4}, HostRanks{"n2", 4}));
  EXPECT_THAT(error_of([&] { place_in_allocation(a, per_node(5)); }),
              HasSubstr("allows on host n1 (4 GPUs; GPUs per node): give --n-per-node 4 or less, "
                        "or ask Slurm for more GPUs per node (--gpus-per-node)"));
}

TEST(AllocationPlacement, LocalGpusCountWhenTheJobDoesNotSayAndNoGpuWins) {
  AllocationRequest r;
  r.local_gpu_count = 2;
  EXPECT_THAT(place_in_allocation(job({1, 1}, "1(x2)"), r).hosts,
              ElementsAre(HostRanks{"n1", 2}, HostRanks{"n2", 2}));
  r.no_gpu = true;
  const auto p = place_in_allocation(job({1, 1}, "1(x2)"), r);
  EXPECT_FALSE(p.use_gpu);
  EXPECT_THAT(p.hosts, ElementsAre(HostRanks{"n1", 1}, HostRanks{"n2", 1}));
}

}  // namespace
}  // namespace tnt::cli
