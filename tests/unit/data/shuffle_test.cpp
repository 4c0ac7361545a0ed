// Shuffle: a permutation, the same for the same seed, a new one per epoch
// with reshuffle (still a pure function of seed and epoch), the documented
// default seed when none is given, and the bounded displacement of a small
// buffer.
#include <algorithm>
#include <numeric>

#include "test_util.h"

#include "data/nodes/shuffle_order.h"

namespace {

using namespace tnt_test;
using Ints = std::vector<std::int64_t>;

Ints iota(std::int64_t n) {
  Ints v(static_cast<std::size_t>(n));
  std::iota(v.begin(), v.end(), 0);
  return v;
}

TEST(Shuffle, IsAPermutationAndTheSameForTheSameSeed) {
  const auto a = ints(Dataset::range(100).shuffle(100, 42));
  const auto b = ints(Dataset::range(100).shuffle(100, 42));  // built separately
  EXPECT_EQ(a, b);
  EXPECT_NE(a, iota(100));
  EXPECT_TRUE(std::is_permutation(a.begin(), a.end(), iota(100).begin()));
  EXPECT_NE(a, ints(Dataset::range(100).shuffle(100, 43)));
}

TEST(Shuffle, ReshufflesPerEpochAsAPureFunctionOfSeedAndEpoch) {
  const auto ds = Dataset::range(100).shuffle(100, 7);
  const auto e0 = ints(ds, 0), e1 = ints(ds, 1), e2 = ints(ds, 2);
  EXPECT_NE(e0, e1);
  EXPECT_NE(e1, e2);
  EXPECT_EQ(ints(ds, 1), e1);  // again, in any order of passes
  EXPECT_EQ(ints(Dataset::range(100).shuffle(100, 7), 2), e2);
  const auto fixed = Dataset::range(100).shuffle(100, 7, /*reshuffle_each_iteration=*/false);
  EXPECT_EQ(ints(fixed, 0), ints(fixed, 5));
  EXPECT_NE(ints(fixed, 0), iota(100));
}

TEST(Shuffle, UsesTheDefaultSeedWhenNoneIsGiven) {
  const auto unseeded = ints(Dataset::range(50).shuffle(50), 3);
  EXPECT_EQ(unseeded, ints(Dataset::range(50).shuffle(50, tnt::data::kDefaultShuffleSeed), 3));
  EXPECT_EQ(unseeded, ints(Dataset::range(50).shuffle(50), 3));
  EXPECT_NE(unseeded, ints(Dataset::range(50).shuffle(50, 1), 3));
  EXPECT_NE(unseeded, iota(50));
}

TEST(Shuffle, ASmallBufferBoundsHowFarAnElementMovesForward) {
  // With a buffer of b, output position j holds an input from 0..j+b-1.
  for (std::int64_t b : {1, 2, 5, 17}) {
    const auto order = ints(Dataset::range(200).shuffle(b, 9));
    ASSERT_TRUE(std::is_permutation(order.begin(), order.end(), iota(200).begin()));
    for (std::size_t j = 0; j < order.size(); ++j) {
      ASSERT_LT(order[j], static_cast<std::int64_t>(j) + b) << "buffer " << b << " position " << j;
    }
    if (b == 1) {
      EXPECT_EQ(order, iota(200));
    }
  }
}

TEST(Shuffle, RandomAccessAndSequentialReadsGiveTheSameOrder) {
  const auto seq = Dataset::range(64).filter([](const Element&) { return true; });
  for (std::int64_t b : {4, 64, 100}) {
    EXPECT_EQ(ints(Dataset::range(64).shuffle(b, 11), 2), ints(seq.shuffle(b, 11), 2))
        << "buffer " << b;
  }
}

TEST(Shuffle, TheOrderFunctionIsPinned) {
  // The order is part of the contract (the same on every platform and in
  // every release): a change here changes every user's training run. The
  // expected values come from an independent Python transcription of the
  // algorithm in shuffle_order.h (splitmix64, Lemire's bounded draw, the
  // tf.data buffer), not from this implementation.
  EXPECT_EQ(tnt::data::detail::shuffle_order(10, 10, 42), (Ints{7, 1, 2, 9, 0, 4, 5, 6, 3, 8}));
  EXPECT_EQ(tnt::data::detail::shuffle_order(12, 3, 7),
            (Ints{1, 0, 2, 3, 6, 4, 7, 8, 10, 9, 11, 5}));
}

TEST(Shuffle, InvalidBufferIsAnError) {
  expect_error([] { Dataset::range(3).shuffle(0); }, {"buffer_size 0"});
}

}  // namespace
