// dp::exact_sum, the sum behind deterministic training: the same bits on
// every rank however the parts are spread over the ranks, close to the
// float64 sum, NaN where a part is not finite.
#include <gtest/gtest.h>

#include <limits>
#include <mutex>

#include <torch/torch.h>

#include <tarantella/comm/in_process.h>

#include "dp/exact_sum.h"

namespace {

// Parts of three tensors: float32 values over 12 orders of magnitude, a
// float64 vector, an int64 counter.
std::vector<std::vector<torch::Tensor>> make_parts(int count) {
  torch::manual_seed(3);
  std::vector<std::vector<torch::Tensor>> parts;
  for (int j = 0; j < count; ++j) {
    parts.push_back({torch::randn({5, 7}) * std::pow(10.0, (j % 7) - 3),
                     torch::randn({4}, torch::kFloat64) * 1e6,
                     torch::full({2}, j + 1, torch::kInt64)});
  }
  return parts;
}

// The sums when parts[first[r] .. first[r+1]) belong to rank r.
std::vector<std::vector<torch::Tensor>> sums_with_split(
    const std::vector<std::vector<torch::Tensor>>& parts, const std::vector<int>& first) {
  const int n = static_cast<int>(first.size()) - 1;
  std::vector<std::vector<torch::Tensor>> out(static_cast<std::size_t>(n));
  std::mutex mutex;
  tnt::comm::run_in_process(n, [&](const tnt::comm::ProcessGroup& g) {
    std::vector<std::vector<torch::Tensor>> mine(parts.begin() + first[g.rank()],
                                                 parts.begin() + first[g.rank() + 1]);
    auto sums = tnt::dp::exact_sum(g, mine, parts.front(), static_cast<std::int64_t>(parts.size()));
    std::lock_guard<std::mutex> lock(mutex);
    out[static_cast<std::size_t>(g.rank())] = std::move(sums);
  });
  return out;
}

TEST(ExactSum, TheSameBitsWhateverTheSplitAndOnEveryRank) {
  const auto parts = make_parts(12);
  const auto reference = sums_with_split(parts, {0, 12}).front();
  for (const std::vector<int>& split : std::vector<std::vector<int>>{
           {0, 6, 12}, {0, 1, 12}, {0, 4, 8, 12}, {0, 0, 5, 12}, {0, 3, 3, 9, 12}, {0, 12, 12, 12, 12}}) {
    const auto sums = sums_with_split(parts, split);
    for (std::size_t r = 0; r < sums.size(); ++r) {
      for (std::size_t t = 0; t < reference.size(); ++t) {
        EXPECT_TRUE(torch::equal(sums[r][t], reference[t]))
            << "tensor " << t << " on rank " << r << " of " << sums.size();
      }
    }
  }
  // Close to the float64 sum (1e-10 of the largest value: far below float32
  // rounding, 1.2e-7), exact for integers.
  for (std::size_t t = 0; t < 2; ++t) {
    torch::Tensor sum64 = torch::zeros_like(reference[t]);
    double largest = 0;
    for (const auto& p : parts) {
      sum64 += p[t].to(torch::kFloat64);
      largest = std::max(largest, p[t].abs().max().to(torch::kFloat64).item<double>());
    }
    EXPECT_LE((reference[t] - sum64).abs().max().item<double>(), largest * 1e-10) << t;
  }
  EXPECT_TRUE(torch::equal(reference[2], torch::full({2}, 78, torch::kInt64)));
  EXPECT_EQ(reference[0].scalar_type(), torch::kFloat64);
}

TEST(ExactSum, FloatSumsInAnotherOrderDoNotHaveThisProperty) {
  const auto parts = make_parts(12);
  torch::Tensor forward = torch::zeros({5, 7}), backward = torch::zeros({5, 7});
  for (std::size_t j = 0; j < parts.size(); ++j) forward += parts[j][0];
  for (std::size_t j = parts.size(); j-- > 0;) backward += parts[j][0];
  EXPECT_FALSE(torch::equal(forward, backward)) << "the data must make order visible";
}

TEST(ExactSum, ANonFiniteValueMakesThatTensorNaNOnEveryRank) {
  auto parts = make_parts(6);
  parts[4][0][1][2] = std::numeric_limits<float>::infinity();
  const auto sums = sums_with_split(parts, {0, 2, 6});
  for (const auto& rank : sums) {
    EXPECT_TRUE(rank[0].isnan().all().item<bool>());
    EXPECT_FALSE(rank[1].isnan().any().item<bool>()) << "the other tensors are summed as usual";
  }
}

// Exponents predicted from an earlier sum that no longer fit (values grew by
// 2^20, or shrank by 2^40) are refused on every rank with fitting ones; the
// redone sum equals the one-shot exact_sum bit for bit.
TEST(ExactSum, ExponentsThatDoNotFitAreRefusedAndReplaced) {
  const auto parts = make_parts(8);
  const auto expected = sums_with_split(parts, {0, 8}).front();
  tnt::comm::run_in_process(2, [&](const tnt::comm::ProcessGroup& g) {
    std::vector<std::vector<torch::Tensor>> mine(parts.begin() + 4 * g.rank(),
                                                 parts.begin() + 4 * g.rank() + 4);
    tnt::dp::ExactSum sum(parts.front());
    sum.begin({0, 0, 0});
    for (const auto& p : mine) sum.add(p);
    ASSERT_TRUE(sum.finish(g, 8).has_value() == false) << "e = 0 leaves too few bits";
    const std::vector<int> fitting = sum.exponents();
    for (int shift : {-20, 40}) {
      sum.begin({fitting[0] + shift, fitting[1] + shift, 0});
      for (const auto& p : mine) sum.add(p);
      EXPECT_FALSE(sum.finish(g, 8).has_value()) << "shift " << shift;
      EXPECT_EQ(sum.exponents(), fitting);
    }
    sum.begin(fitting);
    for (const auto& p : mine) sum.add(p);
    const auto sums = sum.finish(g, 8);
    ASSERT_TRUE(sums.has_value());
    for (std::size_t t = 0; t < expected.size(); ++t) EXPECT_TRUE(torch::equal((*sums)[t], expected[t])) << t;
  });
}

TEST(ExactSum, AllZeroAndNoPartsAnywhere) {
  const std::vector<std::vector<torch::Tensor>> parts = {{torch::zeros({3})}, {torch::zeros({3})}};
  const auto sums = sums_with_split(parts, {0, 1, 2});
  EXPECT_TRUE(torch::equal(sums[1][0], torch::zeros({3}, torch::kFloat64)));
}

}  // namespace
