// The in-memory sources: contents, cardinality, edge cases and errors.
#include <atomic>

#include "test_util.h"

namespace {

using namespace tnt_test;
using tnt::data::kInfiniteCardinality;

TEST(Sources, TensorSlicesSlicesEveryTensorAlongDimensionZero) {
  const auto x = torch::arange(10, torch::kFloat32).reshape({5, 2});
  const auto y = torch::arange(5, torch::kInt64) * 10;
  const auto ds = Dataset::from_tensor_slices({x, y});
  EXPECT_EQ(ds.cardinality(), 5);
  const auto items = collect(ds);
  ASSERT_EQ(items.size(), 5u);
  for (std::int64_t i = 0; i < 5; ++i) EXPECT_ELEMENT_EQ(items[i], (Element{x[i], y[i]}));
}

TEST(Sources, TensorSlicesOfZeroRowsIsEmpty) {
  const auto ds = Dataset::from_tensor_slices({torch::zeros({0, 3})});
  EXPECT_EQ(ds.cardinality(), 0);
  EXPECT_TRUE(collect(ds).empty());
  EXPECT_TRUE(collect(ds.batch(4)).empty());
  EXPECT_EQ(ds.batch(4).cardinality(), 0);
}

TEST(Sources, TensorSlicesRejectsMismatchedRowsAndScalars) {
  expect_error(
      [] {
        Dataset::from_tensor_slices({torch::zeros({5, 2}), torch::zeros({3})});
      },
      {"tensor 1 has 3 rows", "tensor 0 has 5"});
  expect_error([] { Dataset::from_tensor_slices({torch::tensor(1.0)}); },
               {"scalar", "from_tensors"});
  expect_error([] { Dataset::from_tensor_slices({}); }, {"no tensors"});
}

TEST(Sources, FromTensorsIsOneElement) {
  const auto x = torch::ones({2, 3});
  const auto ds = Dataset::from_tensors({x, torch::tensor(7)});
  EXPECT_EQ(ds.cardinality(), 1);
  const auto items = collect(ds);
  ASSERT_EQ(items.size(), 1u);
  EXPECT_ELEMENT_EQ(items[0], (Element{x, torch::tensor(7)}));
}

TEST(Sources, RangeCountsUpAndDown) {
  EXPECT_EQ(ints(Dataset::range(5)), (std::vector<std::int64_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ(ints(Dataset::range(2, 10, 3)), (std::vector<std::int64_t>{2, 5, 8}));
  EXPECT_EQ(ints(Dataset::range(10, 0, -3)), (std::vector<std::int64_t>{10, 7, 4, 1}));
  EXPECT_EQ(Dataset::range(10, 0, -3).cardinality(), 4);
  EXPECT_TRUE(ints(Dataset::range(3, 3)).empty());
  EXPECT_TRUE(ints(Dataset::range(5, 3)).empty());
  EXPECT_EQ(Dataset::range(5, 3).cardinality(), 0);
  expect_error([] { Dataset::range(0, 5, 0); }, {"step must not be 0"});
}

TEST(Sources, RangeElementsAreInt64Scalars) {
  const auto items = collect(Dataset::range(1));
  ASSERT_EQ(items.size(), 1u);
  EXPECT_EQ(items[0][0].dim(), 0);
  EXPECT_EQ(items[0][0].scalar_type(), torch::kInt64);
  const auto batch = collect(Dataset::range(4, 9).batch(5));
  ASSERT_EQ(batch.size(), 1u);
  EXPECT_ELEMENT_EQ(batch[0], (Element{torch::arange(4, 9, torch::kInt64)}));
}

TEST(Sources, GeneratorIsCalledOnlyForElementsThatAreUsed) {
  auto calls = std::make_shared<std::atomic<int>>(0);
  const auto ds = Dataset::from_generator(
      [calls](std::int64_t i) {
        ++*calls;
        return Element{torch::tensor(i * i)};
      },
      100);
  EXPECT_EQ(ds.cardinality(), 100);
  EXPECT_EQ(ints(ds.skip(10).take(3)), (std::vector<std::int64_t>{100, 121, 144}));
  EXPECT_EQ(calls->load(), 3);
}

TEST(Sources, InfiniteGeneratorWithTake) {
  const auto ds = Dataset::from_generator([](std::int64_t i) { return Element{torch::tensor(i)}; },
                                          kInfiniteCardinality);
  EXPECT_EQ(ds.cardinality(), kInfiniteCardinality);
  EXPECT_EQ(ds.take(4).cardinality(), 4);
  EXPECT_EQ(ints(ds.take(4)), (std::vector<std::int64_t>{0, 1, 2, 3}));
  expect_error([] { Dataset::from_generator({}, 3); }, {"generator function is empty"});
  expect_error([] { Dataset::from_generator([](std::int64_t) { return Element{}; }, -5); },
               {"size -5 is invalid"});
}

}  // namespace
