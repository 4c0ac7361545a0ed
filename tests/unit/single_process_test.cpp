// A program started without any launcher is a job of one rank: the runtime
// starts (MPI singleton), collectives are identities, shutdown is clean.
#include <gtest/gtest.h>

#include <tarantella/tarantella.h>

namespace {

TEST(SingleProcess, RankApiWithoutLauncher) {
  EXPECT_FALSE(tnt::is_initialized());
  EXPECT_THROW(tnt::get_rank(), tnt::Error);
  {
    tnt::Runtime runtime;
    EXPECT_TRUE(tnt::is_initialized());
    EXPECT_EQ(tnt::get_rank(), 0);
    EXPECT_EQ(tnt::get_size(), 1);
    EXPECT_EQ(tnt::get_master_rank(), 0);
    EXPECT_TRUE(tnt::is_master_rank());
    EXPECT_EQ(tnt::get_local_rank(), 0);
    EXPECT_EQ(tnt::get_local_size(), 1);

    auto t = torch::arange(10, torch::kFloat32);
    EXPECT_TRUE(torch::equal(tnt::comm::allreduce(t.clone()), t));
    EXPECT_TRUE(torch::equal(tnt::comm::allreduce(t.clone(), tnt::comm::ReduceOp::Average), t));
    EXPECT_TRUE(torch::equal(tnt::comm::allgather(t), t));
    EXPECT_TRUE(torch::equal(tnt::comm::allgatherv(t), t));
    EXPECT_TRUE(torch::equal(tnt::comm::reduce_scatter(t), t));
    EXPECT_TRUE(torch::equal(tnt::comm::broadcast(t.clone(), 0), t));
    tnt::comm::barrier();
    // Bad arguments are errors that name the value and the fix.
    try {
      tnt::comm::broadcast(t.clone(), 3);
      FAIL() << "broadcast from root 3 in a job of 1 rank did not raise";
    } catch (const tnt::Error& e) {
      EXPECT_NE(std::string(e.what()).find("root 3 is not a rank of this job"), std::string::npos)
          << e.what();
    }
    try {
      tnt::comm::allreduce(torch::ones({4, 4}).t().slice(0, 0, 2));
      FAIL() << "non-contiguous tensor accepted";
    } catch (const tnt::Error& e) {
      EXPECT_NE(std::string(e.what()).find(".contiguous()"), std::string::npos) << e.what();
    }
    EXPECT_THROW(tnt::comm::allreduce(torch::ones({2}, torch::kBool)), tnt::Error);
    EXPECT_THROW(tnt::comm::allreduce(torch::ones({2}, torch::kInt64),
                                      tnt::comm::ReduceOp::Average),
                 tnt::Error);
    EXPECT_THROW(tnt::comm::allreduce(torch::ones({2}, torch::kComplexFloat)), tnt::Error);
    // Still usable after rejected calls.
    EXPECT_TRUE(torch::equal(tnt::comm::allreduce(t.clone()), t));
    EXPECT_THROW(tnt::Runtime second, tnt::Error);
  }
  EXPECT_FALSE(tnt::is_initialized());
}

}  // namespace
