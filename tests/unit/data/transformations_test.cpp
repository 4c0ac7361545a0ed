// Every transformation against expected results, over random access and over
// the sequential path (a pass-through filter in front forces the latter),
// with the edge cases: empty input, taking more than there is, a batch larger
// than the dataset.
#include <atomic>
#include <chrono>
#include <random>
#include <thread>

#include "test_util.h"

namespace {

using namespace tnt_test;
using tnt::data::kInfiniteCardinality;
using tnt::data::kUnknownCardinality;
using Ints = std::vector<std::int64_t>;

// The same dataset, read sequentially: filter has no random access.
Dataset sequential(const Dataset& ds) {
  return ds.filter([](const Element&) { return true; });
}

// Runs `check` on the random-access and the sequential form of `ds`.
template <typename Check>
void both_paths(const Dataset& ds, Check&& check) {
  {
    SCOPED_TRACE("random access");
    check(ds);
  }
  {
    SCOPED_TRACE("sequential");
    check(sequential(ds));
  }
}

Element times(Element e, std::int64_t k) {
  e[0] = e[0] * k;
  return e;
}

TEST(Map, AppliesTheFunctionToEveryElement) {
  both_paths(Dataset::range(5), [](const Dataset& ds) {
    EXPECT_EQ(ints(ds.map([](Element e) { return times(std::move(e), 3); })),
              (Ints{0, 3, 6, 9, 12}));
  });
  EXPECT_EQ(Dataset::range(5).map([](Element e) { return e; }).cardinality(), 5);
}

TEST(Map, ParallelWorkersKeepTheInputOrder) {
  auto slow_square = [](Element e) {
    const auto v = e[0].item<std::int64_t>();
    std::this_thread::sleep_for(std::chrono::microseconds((v * 7919) % 300));
    return Element{torch::tensor(v * v)};
  };
  Ints expected;
  for (std::int64_t i = 0; i < 64; ++i) expected.push_back(i * i);
  const auto opts = tnt::data::MapOptions().num_workers(4);
  both_paths(Dataset::range(64), [&](const Dataset& ds) {
    EXPECT_EQ(ints(ds.map(slow_square, opts)), expected);  // element by element
    Ints batched;
    for (const auto& b : collect(ds.map(slow_square, opts).batch(10))) {
      for (std::int64_t i = 0; i < b[0].size(0); ++i)
        batched.push_back(b[0][i].item<std::int64_t>());
    }
    EXPECT_EQ(batched, expected);
  });
  expect_error(
      [] {
        Dataset::range(3).map([](Element e) { return e; }, tnt::data::MapOptions().num_workers(0));
      },
      {"num_workers 0"});
}

// An element with no tensors stands for a sample skipped as bad
// (OnBadSample::skip); a map that returns one must not drop it silently.
TEST(Map, AFunctionReturningNoTensorsIsAnError) {
  const auto none = [](Element e) { return e[0].item<std::int64_t>() == 2 ? Element{} : e; };
  both_paths(Dataset::range(5), [&](const Dataset& ds) {
    for (const auto& d : {ds.map(none), ds.map(none).batch(2),
                          ds.map(none, tnt::data::MapOptions().num_workers(3))}) {
      expect_error([&] { collect(d); }, {"map: the function returned an element with no tensors",
                                         "position 2", "use filter"});
    }
  });
}

TEST(Map, AnExceptionInTheFunctionReachesTheCaller) {
  for (int workers : {1, 3}) {
    const auto ds = Dataset::range(20).map(
        [](Element e) {
          if (e[0].item<std::int64_t>() == 13) throw std::runtime_error("bad sample 13");
          return e;
        },
        tnt::data::MapOptions().num_workers(workers));
    for (const auto& d : {ds.batch(5), ds}) {
      try {
        collect(d);
        ADD_FAILURE() << "no exception with " << workers << " workers";
      } catch (const std::runtime_error& e) {
        EXPECT_STREQ(e.what(), "bad sample 13");
      }
    }
  }
}

TEST(Filter, KeepsAcceptedElementsAndHasUnknownCardinality) {
  const auto even = Dataset::range(10).filter(
      [](const Element& e) { return e[0].item<std::int64_t>() % 2 == 0; });
  EXPECT_EQ(ints(even), (Ints{0, 2, 4, 6, 8}));
  EXPECT_EQ(even.cardinality(), kUnknownCardinality);
  EXPECT_TRUE(ints(Dataset::range(10).filter([](const Element&) { return false; })).empty());
  EXPECT_EQ(Dataset::range(0).filter([](const Element&) { return true; }).cardinality(), 0);
  const auto batches = collect(even.batch(2));
  ASSERT_EQ(batches.size(), 3u);
  EXPECT_ELEMENT_EQ(batches[2], (Element{torch::tensor({8}, torch::kInt64)}));
}

TEST(Batch, StacksAndKeepsOrDropsTheShortLastBatch) {
  const auto x = torch::arange(30, torch::kFloat32).reshape({10, 3});
  both_paths(Dataset::from_tensor_slices({x, torch::arange(10)}), [&](const Dataset& ds) {
    const auto kept = collect(ds.batch(4));
    ASSERT_EQ(kept.size(), 3u);
    EXPECT_ELEMENT_EQ(kept[0], (Element{x.narrow(0, 0, 4), torch::arange(0, 4)}));
    EXPECT_ELEMENT_EQ(kept[2], (Element{x.narrow(0, 8, 2), torch::arange(8, 10)}));
    const auto dropped = collect(ds.batch(4, /*drop_remainder=*/true));
    ASSERT_EQ(dropped.size(), 2u);
    EXPECT_ELEMENT_EQ(dropped[1], (Element{x.narrow(0, 4, 4), torch::arange(4, 8)}));
  });
  const auto ds = Dataset::from_tensor_slices({x});
  EXPECT_EQ(ds.batch(4).cardinality(), 3);
  EXPECT_EQ(ds.batch(4, true).cardinality(), 2);
  EXPECT_EQ(ds.batch(5).cardinality(), 2);
  expect_error([&] { ds.batch(0); }, {"batch_size 0"});
}

TEST(Batch, LargerThanTheDataset) {
  both_paths(Dataset::range(3), [](const Dataset& ds) {
    const auto all = collect(ds.batch(10));
    ASSERT_EQ(all.size(), 1u);
    EXPECT_ELEMENT_EQ(all[0], (Element{torch::arange(3)}));
    EXPECT_TRUE(collect(ds.batch(10, true)).empty());
  });
  EXPECT_EQ(Dataset::range(3).batch(10).cardinality(), 1);
  EXPECT_EQ(Dataset::range(3).batch(10, true).cardinality(), 0);
}

TEST(Batch, SamplesOfDifferentShapesAreAnErrorNamingPaddedBatch) {
  const auto ragged =
      Dataset::from_generator([](std::int64_t i) { return Element{torch::ones({i + 1})}; }, 4);
  expect_error([&] { collect(ragged.batch(4)); }, {"sample 1", "padded_batch"});
}

TEST(PaddedBatch, PadsToTheLongestOrToFixedShapes) {
  const auto ragged = Dataset::from_generator(
      [](std::int64_t i) {
        return Element{torch::full({i + 1}, i + 1, torch::kInt64), torch::tensor(i)};
      },
      5);
  both_paths(ragged, [](const Dataset& ds) {
    const auto longest = collect(ds.padded_batch(3));
    ASSERT_EQ(longest.size(), 2u);
    EXPECT_ELEMENT_EQ(
        longest[0],
        (Element{torch::tensor({1, 0, 0, 2, 2, 0, 3, 3, 3}, torch::kInt64).reshape({3, 3}),
                 torch::tensor({0, 1, 2}, torch::kInt64)}));
    EXPECT_EQ(longest[1][0].sizes(), (std::vector<std::int64_t>{2, 5}));
    const auto fixed = collect(ds.padded_batch(
        2,
        tnt::data::PaddingOptions().padded_shapes({{6}, {}}).padding_values({-1, 0}).drop_remainder(
            true)));
    ASSERT_EQ(fixed.size(), 2u);
    EXPECT_ELEMENT_EQ(
        fixed[0],
        (Element{torch::tensor({1, -1, -1, -1, -1, -1, 2, 2, -1, -1, -1, -1}, torch::kInt64)
                     .reshape({2, 6}),
                 torch::tensor({0, 1}, torch::kInt64)}));
  });
  expect_error(
      [&] {
        collect(ragged.padded_batch(5, tnt::data::PaddingOptions().padded_shapes({{3}, {}})));
      },
      {"size 5", "padded size 3"});
}

TEST(Unbatch, InvertsBatch) {
  const auto x = torch::arange(14).reshape({7, 2});
  both_paths(Dataset::from_tensor_slices({x}), [&](const Dataset& ds) {
    const auto rows = collect(ds.batch(3).unbatch());
    ASSERT_EQ(rows.size(), 7u);
    for (std::int64_t i = 0; i < 7; ++i) EXPECT_ELEMENT_EQ(rows[i], (Element{x[i]}));
  });
  EXPECT_EQ(Dataset::range(4).batch(2).unbatch().cardinality(), kUnknownCardinality);
  expect_error([] { collect(Dataset::range(3).unbatch()); }, {"scalar"});
}

TEST(Repeat, RepeatsCountTimesOrForever) {
  both_paths(Dataset::range(3), [](const Dataset& ds) {
    EXPECT_EQ(ints(ds.repeat(2)), (Ints{0, 1, 2, 0, 1, 2}));
    EXPECT_EQ(ints(ds.repeat().take(7)), (Ints{0, 1, 2, 0, 1, 2, 0}));
    EXPECT_TRUE(ints(ds.repeat(0)).empty());
    EXPECT_EQ(ints(ds.repeat(2).batch(4).unbatch()), (Ints{0, 1, 2, 0, 1, 2}));
  });
  EXPECT_EQ(Dataset::range(3).repeat(2).cardinality(), 6);
  EXPECT_EQ(Dataset::range(3).repeat().cardinality(), kInfiniteCardinality);
  EXPECT_EQ(Dataset::range(0).repeat().cardinality(), 0);
  EXPECT_EQ(sequential(Dataset::range(3)).repeat().cardinality(), kUnknownCardinality);
}

TEST(Repeat, ForeverOverAnEmptyStreamEnds) {
  const auto none = Dataset::range(5).filter([](const Element&) { return false; });
  EXPECT_TRUE(ints(none.repeat()).empty());
}

TEST(Repeat, EachRepetitionIsReshuffled) {
  both_paths(Dataset::range(20), [](const Dataset& ds) {
    const auto twice = ints(ds.shuffle(20, 3).repeat(2));
    ASSERT_EQ(twice.size(), 40u);
    const Ints first(twice.begin(), twice.begin() + 20), second(twice.begin() + 20, twice.end());
    EXPECT_NE(first, second);
    EXPECT_TRUE(std::is_permutation(first.begin(), first.end(), second.begin()));
  });
}

TEST(TakeSkip, SelectByPositionIncludingMoreThanAvailable) {
  both_paths(Dataset::range(5), [](const Dataset& ds) {
    EXPECT_EQ(ints(ds.take(3)), (Ints{0, 1, 2}));
    EXPECT_EQ(ints(ds.take(100)), (Ints{0, 1, 2, 3, 4}));
    EXPECT_TRUE(ints(ds.take(0)).empty());
    EXPECT_EQ(ints(ds.take(-1)).size(), 5u);
    EXPECT_EQ(ints(ds.skip(2)), (Ints{2, 3, 4}));
    EXPECT_TRUE(ints(ds.skip(100)).empty());
    EXPECT_TRUE(ints(ds.skip(-1)).empty());
  });
  const auto ds = Dataset::range(5);
  EXPECT_EQ(ds.take(100).cardinality(), 5);
  EXPECT_EQ(ds.take(3).cardinality(), 3);
  EXPECT_EQ(ds.skip(2).cardinality(), 3);
  EXPECT_EQ(ds.skip(100).cardinality(), 0);
  EXPECT_EQ(ds.skip(-1).cardinality(), 0);
  EXPECT_EQ(ds.repeat().take(9).cardinality(), 9);
  expect_error([&] { ds.take(-2); }, {"count -2"});
  expect_error([&] { ds.repeat().skip(-1); }, {"never end"});
}

TEST(Shard, TakesEveryNthElement) {
  both_paths(Dataset::range(10), [](const Dataset& ds) {
    EXPECT_EQ(ints(ds.shard(3, 0)), (Ints{0, 3, 6, 9}));
    EXPECT_EQ(ints(ds.shard(3, 1)), (Ints{1, 4, 7}));
    EXPECT_EQ(ints(ds.shard(3, 2)), (Ints{2, 5, 8}));
  });
  EXPECT_EQ(Dataset::range(10).shard(3, 0).cardinality(), 4);
  EXPECT_EQ(Dataset::range(10).shard(3, 2).cardinality(), 3);
  expect_error([] { Dataset::range(10).shard(3, 3); }, {"index 3", "0..2"});
}

TEST(Zip, JoinsTuplesAndEndsWithTheShortest) {
  both_paths(Dataset::range(3), [](const Dataset& a) {
    const auto zipped = Dataset::zip({a, Dataset::range(10, 15)});
    const auto items = collect(zipped);
    ASSERT_EQ(items.size(), 3u);
    EXPECT_ELEMENT_EQ(items[2], (Element{torch::tensor(2), torch::tensor(12)}));
    const auto batch = collect(zipped.batch(3));
    EXPECT_ELEMENT_EQ(batch.at(0), (Element{torch::arange(3), torch::arange(10, 13)}));
  });
  EXPECT_EQ(Dataset::zip({Dataset::range(3), Dataset::range(10, 15)}).cardinality(), 3);
  EXPECT_EQ(Dataset::zip({Dataset::range(3).repeat(), Dataset::range(10, 15)}).cardinality(), 5);
}

TEST(Concatenate, AppendsAndBatchesAcrossTheBoundary) {
  both_paths(Dataset::range(3), [](const Dataset& a) {
    const auto both = a.concatenate(Dataset::range(5, 7));
    EXPECT_EQ(ints(both), (Ints{0, 1, 2, 5, 6}));
    const auto batches = collect(both.batch(2));
    ASSERT_EQ(batches.size(), 3u);
    EXPECT_ELEMENT_EQ(batches[1], (Element{torch::tensor({2, 5}, torch::kInt64)}));
    EXPECT_EQ(ints(Dataset::range(0).concatenate(a)), (Ints{0, 1, 2}));
  });
  EXPECT_EQ(Dataset::range(3).concatenate(Dataset::range(5, 7)).cardinality(), 5);
}

TEST(Enumerate, PrependsTheCounter) {
  both_paths(Dataset::range(10, 13), [](const Dataset& ds) {
    const auto items = collect(ds.enumerate(5));
    ASSERT_EQ(items.size(), 3u);
    EXPECT_ELEMENT_EQ(items[1], (Element{torch::tensor(6), torch::tensor(11)}));
    const auto batch = collect(ds.enumerate().batch(3));
    EXPECT_ELEMENT_EQ(batch.at(0), (Element{torch::arange(3), torch::arange(10, 13)}));
  });
}

TEST(Cache, ComputesEachElementOnceAndFreezesTheFirstPass) {
  for (bool seq : {false, true}) {
    SCOPED_TRACE(seq ? "sequential" : "random access");
    auto calls = std::make_shared<std::atomic<int>>(0);
    auto ds = Dataset::range(12).map([calls](Element e) {
      ++*calls;
      return e;
    });
    if (seq) ds = sequential(ds);
    const auto cached = ds.shuffle(12, 5).cache();
    const auto first = ints(cached, 0);
    const auto second = ints(cached, 1);
    EXPECT_EQ(first, second);
    EXPECT_EQ(calls->load(), 12);
    EXPECT_NE(first, ints(ds.shuffle(12, 5), 1));  // without cache epoch 1 differs
  }
}

TEST(Cache, AnEarlyStoppedPassIsCompletedByTheNext) {
  auto calls = std::make_shared<std::atomic<int>>(0);
  const auto cached = sequential(Dataset::range(6))
                          .map([calls](Element e) {
                            ++*calls;
                            return e;
                          })
                          .cache();
  EXPECT_EQ(ints(cached.take(2)), (Ints{0, 1}));
  EXPECT_EQ(ints(cached), (Ints{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(ints(cached), (Ints{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(calls->load(), 6);
}

TEST(Prefetch, YieldsTheSameElements) {
  both_paths(Dataset::range(50), [](const Dataset& ds) {
    EXPECT_EQ(ints(ds.prefetch(3)), ints(ds));
    EXPECT_EQ(ints(ds.batch(7).prefetch(2).unbatch()), ints(ds));
  });
  EXPECT_EQ(Dataset::range(50).prefetch(3).cardinality(), 50);
  expect_error([] { Dataset::range(3).prefetch(0); }, {"buffer_size 0"});
}

TEST(Iteration, RangeForCountsEpochsSharedByCopies) {
  const auto ds = Dataset::range(10).shuffle(10, 1);
  Ints seen;
  for (const auto& e : ds) seen.push_back(e[0].item<std::int64_t>());
  EXPECT_EQ(seen, ints(ds, 0));
  const Dataset copy = ds;
  seen.clear();
  for (const auto& e : copy) seen.push_back(e[0].item<std::int64_t>());
  EXPECT_EQ(seen, ints(ds, 1));
  expect_error([&] { ds.iterate(-1); }, {"epoch -1"});
}

TEST(Iteration, DescribeShowsThePipeline) {
  const auto ds =
      Dataset::from_tensor_slices({torch::zeros({8, 2})}).shuffle(8, 1).batch(4).prefetch(2);
  EXPECT_EQ(ds.describe(), "tensor_slices(8) -> shuffle(8, seed=1) -> batch(4) -> prefetch(2)");
}

}  // namespace
