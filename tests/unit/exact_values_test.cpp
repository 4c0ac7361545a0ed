// The inputs of the NCCL backend's tests (tests/cuda/exact_values.h), checked
// on the CPU where those tests cannot run: summed rank by rank in the dtype
// itself (each partial sum rounded to it), forwards and backwards, every
// partial sum over 1..64 ranks equals the exact int64 sum, so NCCL's order of
// addition cannot matter; Max and Min are exact as well.
#include <gtest/gtest.h>

#include "../cuda/exact_values.h"

namespace {

using tnt_test::Combine;
using tnt_test::exact_input;
using tnt_test::exact_result;

constexpr int kMaxRanks = 64;
constexpr std::int64_t kCount = 1000;

TEST(NcclExactValues, EveryPartialSumIsExactInEveryDtypeUpTo64Ranks) {
  for (auto dtype : {torch::kFloat32, torch::kFloat64, torch::kFloat16, torch::kBFloat16,
                     torch::kInt32, torch::kInt64, torch::kUInt8}) {
    SCOPED_TRACE(c10::toString(dtype));
    for (bool backwards : {false, true}) {
      torch::Tensor in_dtype = torch::zeros({kCount}, dtype);
      torch::Tensor exact = torch::zeros({kCount}, torch::kInt64);
      for (int k = 0; k < kMaxRanks; ++k) {
        const int r = backwards ? kMaxRanks - 1 - k : k;
        const torch::Tensor x = exact_input(kCount, r, dtype);
        ASSERT_TRUE(torch::equal(x.to(dtype).to(torch::kInt64), x)) << "rank " << r;
        in_dtype = in_dtype + x.to(dtype);  // rounded to the dtype after each addition
        exact = exact + x;
        ASSERT_EQ(in_dtype.scalar_type(), dtype);
        ASSERT_TRUE(torch::equal(in_dtype.to(torch::kInt64), exact))
            << (k + 1) << " ranks, " << (backwards ? "last rank first" : "rank 0 first");
      }
      EXPECT_LE(exact.max().item<std::int64_t>(), 160 << (tnt_test::exponent_count(dtype) - 1));
    }
    // What the NCCL test expects: the int64 sum, converted without rounding.
    for (int n : {1, 2, 3, 4, 5, 63, 64}) {
      torch::Tensor sum = torch::zeros({kCount}, torch::kInt64);
      for (int r = 0; r < n; ++r) sum = sum + exact_input(kCount, r, dtype);
      EXPECT_TRUE(torch::equal(exact_result(kCount, n, dtype, Combine::Sum).to(torch::kInt64), sum))
          << n << " ranks";
    }
  }
}

TEST(NcclExactValues, RanksDifferAndMaxMinAreTheirExtremes) {
  for (auto dtype : {torch::kBFloat16, torch::kUInt8}) {
    const torch::Tensor r0 = exact_input(kCount, 0, dtype), r1 = exact_input(kCount, 1, dtype);
    EXPECT_FALSE(torch::equal(r0, r1));
    for (int n : {1, 2, 3, 4, 64}) {
      torch::Tensor hi = exact_input(kCount, 0, dtype), lo = hi.clone();
      for (int r = 1; r < n; ++r) {
        hi = torch::maximum(hi, exact_input(kCount, r, dtype));
        lo = torch::minimum(lo, exact_input(kCount, r, dtype));
      }
      EXPECT_TRUE(torch::equal(exact_result(kCount, n, dtype, Combine::Max), hi.to(dtype))) << n;
      EXPECT_TRUE(torch::equal(exact_result(kCount, n, dtype, Combine::Min), lo.to(dtype))) << n;
    }
  }
  // From 4 ranks on every element's extremes are 1 * 2^e and 4 * 2^e.
  const torch::Tensor hi = exact_result(8, 4, torch::kFloat32, Combine::Max);
  EXPECT_TRUE(torch::equal(hi, torch::tensor({4, 4, 4, 4, 8, 8, 8, 8}, torch::kFloat32)));
}

}  // namespace
