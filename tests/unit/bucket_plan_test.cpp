#include <gtest/gtest.h>

#include <tarantella/dp/bucket_plan.h>

namespace {

using tnt::dp::plan_buckets;

std::vector<torch::Tensor> params(std::initializer_list<std::int64_t> sizes,
                                  torch::ScalarType dtype = torch::kFloat32) {
  std::vector<torch::Tensor> out;
  for (auto n : sizes) out.push_back(torch::zeros({n}, dtype));
  return out;
}

TEST(BucketPlan, ThresholdZeroGivesOneBucketPerTensorInReverseOrder) {
  const auto b = plan_buckets(params({3, 4, 5}), 0);
  ASSERT_EQ(b.size(), 3u);
  EXPECT_EQ(b[0].params, std::vector<std::size_t>{2});
  EXPECT_EQ(b[1].params, std::vector<std::size_t>{1});
  EXPECT_EQ(b[2].params, std::vector<std::size_t>{0});
}

TEST(BucketPlan, LargeThresholdGivesOneBucketWithOffsets) {
  const auto b = plan_buckets(params({3, 4, 5}), 1 << 30);
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(b[0].params, (std::vector<std::size_t>{2, 1, 0}));
  EXPECT_EQ(b[0].offsets, (std::vector<std::int64_t>{0, 5, 9}));
  EXPECT_EQ(b[0].numel, 12);
}

TEST(BucketPlan, BucketClosesWhenItReachesTheThreshold) {
  // float32: 100 elements = 400 bytes. Threshold 800 bytes.
  const auto b = plan_buckets(params({100, 100, 100, 100, 100}), 800);
  ASSERT_EQ(b.size(), 3u);
  EXPECT_EQ(b[0].params, (std::vector<std::size_t>{4, 3}));
  EXPECT_EQ(b[1].params, (std::vector<std::size_t>{2, 1}));
  EXPECT_EQ(b[2].params, (std::vector<std::size_t>{0}));
}

TEST(BucketPlan, DtypeChangeStartsANewBucket) {
  auto p = params({2, 2});
  p.push_back(torch::zeros({2}, torch::kFloat64));
  const auto b = plan_buckets(p, 1 << 20);
  ASSERT_EQ(b.size(), 2u);
  EXPECT_EQ(b[0].dtype, torch::kFloat64);
  EXPECT_EQ(b[1].dtype, torch::kFloat32);
  EXPECT_EQ(b[1].params, (std::vector<std::size_t>{1, 0}));
}

TEST(BucketPlan, NoParametersNoBuckets) { EXPECT_TRUE(plan_buckets({}, 1024).empty()); }

}  // namespace
