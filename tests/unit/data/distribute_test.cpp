// Distribution without MPI: every rank's micro-batches are computed in this
// process with explicit rank and size, and checked against the serial
// pipeline: for every step, the ranks' micro-batches concatenated in rank
// order equal the global batch exactly; every rank runs the same number of
// steps; and each rank maps only its own samples.
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <mutex>
#include <utility>
#include <vector>

#include "data/pipeline/element_ops.h"
#include "data/pipeline/node.h"
#include "rank_share.h"
#include "test_util.h"

namespace {

using namespace tnt_test;
using tnt::data::DistributeOptions;
using tnt::data::MicroBatch;

using Counter = std::shared_ptr<std::atomic<std::int64_t>>;

// {x float [S, 3], y int64 [S]}, shuffled, then a counting map.
Dataset samples(std::int64_t S, bool sequential, Counter counter, int workers = 1) {
  auto ds = Dataset::from_tensor_slices({torch::arange(S * 3, torch::kFloat32).reshape({S, 3}),
                                         torch::arange(S, torch::kInt64)})
                .shuffle(std::max<std::int64_t>(S, 1), 17);
  if (sequential) ds = ds.filter([](const Element&) { return true; });
  return ds.map(
      [counter](Element e) {
        ++*counter;
        e[0] = e[0] * 2 + 1;
        return e;
      },
      tnt::data::MapOptions().num_workers(workers));
}

std::vector<MicroBatch> rank_pass(const Dataset& ds, int rank, int size, std::int64_t epoch,
                                  DistributeOptions options = DistributeOptions()) {
  auto dist = tnt::data::distribute(ds, options.rank(rank).size(size));
  std::vector<MicroBatch> out;
  auto it = dist.iterate(epoch);
  while (auto mb = it.next()) out.push_back(std::move(*mb));
  return out;
}

// The heart of the property test: the ranks' passes against the serial one.
void expect_split_of(const std::vector<Element>& serial,
                     const std::vector<std::vector<MicroBatch>>& ranks) {
  const int n = static_cast<int>(ranks.size());
  for (int r = 0; r < n; ++r) {
    ASSERT_EQ(ranks[r].size(), serial.size())
        << "rank " << r << " of " << n << " ran a different number of steps";
  }
  for (std::size_t step = 0; step < serial.size(); ++step) {
    const std::int64_t global = serial[step].at(0).size(0);
    std::vector<Element> parts;
    for (int r = 0; r < n; ++r) {
      const MicroBatch& mb = ranks[r][step];
      const auto [lo, hi] = tnt::data::micro_batch_range(global, n, r);
      EXPECT_EQ(mb.step, static_cast<std::int64_t>(step));
      EXPECT_EQ(mb.global_size, global) << "step " << step << " rank " << r;
      EXPECT_EQ(mb.local_size, hi - lo) << "step " << step << " rank " << r << " of " << n;
      ASSERT_EQ(mb.tensors.size(), serial[step].size());
      for (std::size_t c = 0; c < mb.tensors.size(); ++c) {
        EXPECT_EQ(mb.tensors[c].size(0), mb.local_size);
        EXPECT_EQ(mb.tensors[c].dtype(), serial[step][c].dtype())
            << "even an empty micro-batch keeps dtypes";
        EXPECT_EQ(mb.tensors[c].sizes().slice(1), serial[step][c].sizes().slice(1))
            << "even an empty micro-batch keeps trailing shapes";
      }
      parts.push_back(mb.tensors);
    }
    Element joined;
    for (std::size_t c = 0; c < serial[step].size(); ++c) {
      std::vector<torch::Tensor> column;
      for (const auto& p : parts) column.push_back(p[c]);
      joined.push_back(torch::cat(column));
    }
    SCOPED_TRACE("step " + std::to_string(step) + " of " + std::to_string(serial.size()) + ", " +
                 std::to_string(n) + " ranks");
    EXPECT_ELEMENT_EQ(joined, serial[step]);
  }
}

TEST(Distribute, PropertyConcatenatedMicroBatchesAreTheGlobalBatch) {
  int cases = 0;
  for (int n = 1; n <= 5; ++n) {
    for (std::int64_t b : {n, n + 1, 2 * n, 2 * n + 1, 7, 12}) {
      if (b < n) continue;
      // divisible; short last batch with L >= N; with L < N (L = 1 and
      // L = N - 1); a single batch shorter than B; an empty dataset.
      for (std::int64_t s : {3 * b, 2 * b + n, 2 * b + 1, 2 * b + n - 1, b - 1, std::int64_t{0}}) {
        if (s < 0) continue;
        for (bool drop : {false, true}) {
          for (bool sequential : {false, true}) {
            SCOPED_TRACE("N=" + std::to_string(n) + " B=" + std::to_string(b) +
                         " S=" + std::to_string(s) + (drop ? " drop_remainder" : "") +
                         (sequential ? " sequential" : " random access"));
            auto counter = std::make_shared<std::atomic<std::int64_t>>(0);
            const auto ds = samples(s, sequential, counter).batch(b, drop);
            const auto serial = collect(ds, /*epoch=*/1);
            std::vector<std::vector<MicroBatch>> ranks;
            for (int r = 0; r < n; ++r) ranks.push_back(rank_pass(ds, r, n, 1));
            expect_split_of(serial, ranks);
            EXPECT_EQ(tnt::data::distribute(ds, DistributeOptions().rank(0).size(n)).cardinality(),
                      ds.cardinality());
            ++cases;
          }
        }
      }
    }
  }
  EXPECT_GT(cases, 500);
}

TEST(Distribute, BatchLevelTransformationsAboveTheBatchAreKept) {
  auto counter = std::make_shared<std::atomic<std::int64_t>>(0);
  const auto base = samples(23, false, counter);
  const auto other = samples(9, true, counter).batch(5);
  auto times_ten = [](Element e) {
    e[0] = e[0] * 10;
    return e;
  };
  const std::vector<std::pair<std::string, Dataset>> variants = {
      {"prefetch", base.batch(5).prefetch(2)},
      {"repeat+take", base.batch(5).repeat(3).take(12)},
      {"skip", base.batch(5).skip(2)},
      {"shuffle of batches", base.batch(5).shuffle(5, 3)},
      {"cache", base.batch(5).cache()},
      {"map after batch", base.batch(5).map(times_ten)},
      {"concatenate", base.batch(5).concatenate(other)},
      {"shard of batches", base.batch(5).shard(2, 1)},
      {"padded_batch with fixed shapes",
       base.padded_batch(
           5, tnt::data::PaddingOptions().padded_shapes({{4}, {}}).padding_values({-1, 0}))},
  };
  for (const auto& [name, ds] : variants) {
    for (int n = 1; n <= 5; ++n) {
      SCOPED_TRACE(name + " at " + std::to_string(n) + " ranks");
      const auto serial = collect(ds, 2);
      std::vector<std::vector<MicroBatch>> ranks;
      for (int r = 0; r < n; ++r) ranks.push_back(rank_pass(ds, r, n, 2));
      expect_split_of(serial, ranks);
    }
  }
}

TEST(Distribute, EachRankMapsOnlyItsOwnSamples) {
  for (bool sequential : {false, true}) {
    for (int workers : {1, 3}) {
      for (std::int64_t s : {100, 103}) {
        const int n = 4;
        const std::int64_t b = 10;
        std::int64_t total = 0;
        for (int r = 0; r < n; ++r) {
          auto counter = std::make_shared<std::atomic<std::int64_t>>(0);
          const auto ds = samples(s, sequential, counter, workers).batch(b);
          for (std::int64_t epoch = 0; epoch < 2; ++epoch) rank_pass(ds, r, n, epoch);
          const std::int64_t expected = 2 * tnt_test::rank_share(s, b, n, r);
          EXPECT_EQ(counter->load(), expected)
              << "rank " << r << " of " << n << " mapped " << counter->load()
              << " samples in 2 epochs of " << s << "; its share is " << expected
              << (sequential ? " (sequential)" : " (random access)") << " workers " << workers;
          std::printf(
              "[ map count ] S=%ld B=%ld N=%d rank %d: %ld of %ld samples mapped in 2 epochs (%s, "
              "%d workers)\n",
              static_cast<long>(s), static_cast<long>(b), n, r, static_cast<long>(counter->load()),
              static_cast<long>(2 * s), sequential ? "sequential" : "random access", workers);
          total += counter->load();
        }
        EXPECT_EQ(total, 2 * s) << "the ranks together map every sample exactly once per epoch";
      }
    }
  }
}

// A map after batch gets exactly the user's tensors on every rank: as many
// as the serial batch has, each with a row per sample of the micro-batch;
// the global batch size travels beside them, never as a tensor. Over random
// access and streams, through the nodes that carry whole batches.
TEST(Distribute, AMapAfterBatchSeesExactlyItsOwnTensors) {
  auto counter = std::make_shared<std::atomic<std::int64_t>>(0);
  for (bool sequential : {false, true}) {
    const auto base = samples(23, sequential, counter);
    const std::vector<std::pair<std::string, Dataset>> variants = {
        {"batch", base.batch(5)},
        {"prefetch", base.batch(5).prefetch(2)},
        {"shuffle of batches", base.batch(5).shuffle(5, 3)},
        {"cache", base.batch(5).cache()},
        {"repeat+take", base.batch(5).repeat(3).take(12)},
        {"enumerate", base.batch(5).enumerate().map([](Element e) {
           e[0] = e[0].expand({e[1].size(0)}).clone();  // the batch number, as a column
           return e;
         })},
        {"zip", Dataset::zip({base.batch(5), base.batch(5)})},
        {"concatenate", base.batch(5).concatenate(base.batch(5))},
    };
    for (const auto& [name, below] : variants) {
      for (int workers : {1, 2}) {
        // Serial element sizes first: the user's tensors, nothing added.
        std::size_t serial_size = 0;
        for (const auto& e : collect(below, 0)) serial_size = e.size();
        ASSERT_GT(serial_size, 0u);
        for (int n = 1; n <= 4; ++n) {
          SCOPED_TRACE(name + " at " + std::to_string(n) + " ranks, " + std::to_string(workers) +
                       " workers" + (sequential ? ", sequential" : ""));
          std::vector<std::size_t> seen;
          std::mutex seen_mutex;
          const auto ds = below.map(
              [&](Element e) {
                std::lock_guard<std::mutex> lock(seen_mutex);
                seen.push_back(e.size());
                return e;
              },
              tnt::data::MapOptions().num_workers(workers));
          std::vector<std::vector<MicroBatch>> ranks;
          for (int r = 0; r < n; ++r) ranks.push_back(rank_pass(ds, r, n, 0));
          ASSERT_FALSE(seen.empty());
          for (std::size_t size : seen) EXPECT_EQ(size, serial_size);
          expect_split_of(collect(below, 0), ranks);  // and the global sizes, step by step
        }
      }
    }
  }
}

// Mid-epoch resume: skip(k) then reading gives exactly the pass's batches
// from k on, numbered from k, and maps none of the skipped samples.
TEST(Distribute, SkipPassesOverBatchesWithoutReadingThem) {
  auto times_ten = [](Element e) {
    e[0] = e[0] * 10;
    return e;
  };
  for (bool sequential : {false, true}) {
    for (bool prefetch : {false, true}) {
      for (int n : {1, 3}) {
        const std::int64_t s = 103, b = 10, k = 4;
        for (int r = 0; r < n; ++r) {
          SCOPED_TRACE(std::string(sequential ? "sequential" : "random access") +
                       (prefetch ? " + prefetch" : "") + ", rank " + std::to_string(r) + " of " +
                       std::to_string(n));
          auto counter = std::make_shared<std::atomic<std::int64_t>>(0);
          Dataset ds = samples(s, sequential, counter).batch(b).map(times_ten);
          if (prefetch) ds = ds.prefetch(2);
          const auto full = rank_pass(ds, r, n, 3);
          counter->store(0);
          auto dist = tnt::data::distribute(ds, DistributeOptions().rank(r).size(n));
          auto it = dist.iterate(3);
          EXPECT_EQ(it.skip(k), k);
          std::vector<MicroBatch> rest;
          while (auto mb = it.next()) rest.push_back(std::move(*mb));
          ASSERT_EQ(rest.size() + k, full.size());
          std::int64_t own = 0;
          for (std::size_t i = 0; i < rest.size(); ++i) {
            const MicroBatch& expected = full[i + k];
            EXPECT_EQ(rest[i].step, expected.step);
            EXPECT_EQ(rest[i].global_size, expected.global_size);
            EXPECT_ELEMENT_EQ(rest[i].tensors, expected.tensors);
            own += rest[i].local_size;
          }
          EXPECT_EQ(counter->load(), own)
              << "only the samples of this rank's remaining micro-batches are mapped";
          // Past the end: skip passes what is left and reports it.
          auto it2 = dist.iterate(3);
          EXPECT_EQ(it2.skip(1000), static_cast<std::int64_t>(full.size()));
          EXPECT_FALSE(it2.next().has_value());
        }
      }
    }
  }
  auto ds = samples(10, false, std::make_shared<std::atomic<std::int64_t>>(0));
  auto it = ds.iterate(0);
  EXPECT_THROW(it.skip(-1), tnt::Error);
}

// Deterministic training's split: whole chunks of g samples per rank, the
// concatenation still the global batch, boundaries on multiples of g.
using Range = std::pair<std::int64_t, std::int64_t>;

TEST(Distribute, GranularityGivesEachRankWholeChunks) {
  EXPECT_EQ(tnt::data::micro_batch_range(10, 4, 1, 3), Range(3, 6));
  EXPECT_EQ(tnt::data::micro_batch_range(10, 4, 3, 3), Range(9, 10));
  EXPECT_EQ(tnt::data::micro_batch_range(10, 2, 0, 3), Range(0, 6));
  EXPECT_EQ(tnt::data::micro_batch_range(4, 4, 2, 3), Range(4, 4));
  for (int n = 1; n <= 4; ++n) {
    for (std::int64_t g : {1, 2, 3, 8}) {
      auto counter = std::make_shared<std::atomic<std::int64_t>>(0);
      const auto ds = samples(50, false, counter).batch(16);  // 3 batches of 16, one of 2
      const auto serial = collect(ds, 0);
      std::vector<std::vector<MicroBatch>> ranks;
      for (int r = 0; r < n; ++r) {
        ranks.push_back(rank_pass(ds, r, n, 0, DistributeOptions().granularity(g)));
      }
      for (std::size_t step = 0; step < serial.size(); ++step) {
        const std::int64_t global = serial[step].at(0).size(0);
        std::vector<torch::Tensor> xs;
        std::int64_t offset = 0;
        for (int r = 0; r < n; ++r) {
          const MicroBatch& mb = ranks[r].at(step);
          const auto [lo, hi] = tnt::data::micro_batch_range(global, n, r, g);
          EXPECT_EQ(lo, offset);
          EXPECT_TRUE((lo % g == 0 || lo == global) && (hi % g == 0 || hi == global))
              << lo << " " << hi;
          EXPECT_EQ(mb.local_size, hi - lo) << "N=" << n << " g=" << g << " rank " << r;
          offset = hi;
          xs.push_back(mb.tensors[0]);
        }
        EXPECT_EQ(offset, global);
        EXPECT_TRUE(torch::equal(torch::cat(xs), serial[step][0])) << "N=" << n << " g=" << g;
      }
    }
  }
}

TEST(Distribute, AnEmptyFirstMicroBatchHasTheRightShapesAndDtypes) {
  auto counter = std::make_shared<std::atomic<std::int64_t>>(0);
  const auto ds = samples(2, false, counter).batch(4);  // one batch of L = 2 at N = 4
  const auto mbs = rank_pass(ds, 3, 4, 0);
  ASSERT_EQ(mbs.size(), 1u);
  EXPECT_EQ(mbs[0].local_size, 0);
  EXPECT_EQ(mbs[0].global_size, 2);
  EXPECT_EQ(mbs[0].tensors[0].sizes(), (std::vector<std::int64_t>{0, 3}));
  EXPECT_EQ(mbs[0].tensors[0].scalar_type(), torch::kFloat32);
  EXPECT_EQ(mbs[0].tensors[1].sizes(), (std::vector<std::int64_t>{0}));
  EXPECT_EQ(mbs[0].tensors[1].scalar_type(), torch::kInt64);
  EXPECT_LE(counter->load(), 1) << "at most one sample is mapped to learn the shapes";
}

TEST(Distribute, MicroBatchSizeOnAnUnbatchedDatasetMeansGlobalBatchMTimesN) {
  const auto ds = Dataset::range(10);
  const auto serial = collect(ds.batch(6));  // m = 2 at N = 3
  std::vector<std::vector<MicroBatch>> ranks;
  for (int r = 0; r < 3; ++r)
    ranks.push_back(rank_pass(ds, r, 3, 0, DistributeOptions().micro_batch_size(2)));
  expect_split_of(serial, ranks);
  EXPECT_EQ(tnt::data::distribute(ds, DistributeOptions().rank(0).size(3).micro_batch_size(2))
                .global_batch_size(),
            6);
  // consistent with a batched dataset: accepted
  EXPECT_EQ(
      tnt::data::distribute(ds.batch(8), DistributeOptions().rank(1).size(4).micro_batch_size(2))
          .global_batch_size(),
      8);
}

TEST(Distribute, ErrorsNameTheNumbersAndTheFix) {
  const auto ds = Dataset::range(40);
  expect_error([&] { tnt::data::distribute(ds.batch(3), DistributeOptions().rank(0).size(4)); },
               {"global batch size 3", "smaller than the number of ranks 4", "at least 4"});
  expect_error(
      [&] {
        tnt::data::distribute(ds.batch(64),
                              DistributeOptions().rank(0).size(4).micro_batch_size(8));
      },
      {"micro_batch_size 8", "global batch size 64", "4 ranks"});
  expect_error([&] { tnt::data::distribute(ds, DistributeOptions().rank(0).size(2)); },
               {"not batched", "micro_batch_size"});
  expect_error(
      [&] {
        tnt::data::distribute(ds.batch(4).filter([](const Element&) { return true; }),
                              DistributeOptions().rank(0).size(2));
      },
      {"filter after batch", "filter the samples before batch", "drop_remainder",
       "enabled(false)"});
  expect_error(
      [&] {
        tnt::data::distribute(Dataset::zip({ds.batch(4), ds.batch(8)}),
                              DistributeOptions().rank(0).size(2));
      },
      {"zip", "different sizes 4 and 8", "same size", "zip before batch"});
  expect_error(
      [&] {
        tnt::data::distribute(Dataset::zip({ds, ds.batch(4)}), DistributeOptions().rank(0).size(2));
      },
      {"zip of a batched and an unbatched dataset", "zip before batch"});
  expect_error(
      [&] { tnt::data::distribute(ds.batch(4).unbatch(), DistributeOptions().rank(0).size(2)); },
      {"not batched", "batch(global_batch_size)"});
  expect_error([&] { tnt::data::distribute(ds.batch(4), DistributeOptions().rank(2).size(2)); },
               {"rank 2", "0..1"});
  expect_error([&] { tnt::data::distribute(ds.batch(4), DistributeOptions().rank(0).size(0)); },
               {"size 0"});
}

TEST(Distribute, SwitchedOffEveryRankUsesItsBatchesAsTheyAre) {
  const auto ds = Dataset::range(10).shard(2, 1).batch(2);
  const auto mbs = rank_pass(ds, 1, 2, 0, DistributeOptions().enabled(false));
  const auto serial = collect(ds);
  ASSERT_EQ(mbs.size(), serial.size());
  for (std::size_t i = 0; i < mbs.size(); ++i) {
    EXPECT_ELEMENT_EQ(mbs[i].tensors, serial[i]);
    EXPECT_EQ(mbs[i].global_size, mbs[i].local_size);
  }
  EXPECT_EQ(mbs.back().local_size, 1);
}

TEST(Distribute, DefaultsToOneRankWithoutARuntime) {
  ASSERT_FALSE(tnt::is_initialized());
  const auto dist = tnt::data::distribute(Dataset::range(10).batch(4));
  EXPECT_EQ(dist.rank(), 0);
  EXPECT_EQ(dist.size(), 1);
  EXPECT_EQ(dist.cardinality(), 3);
  EXPECT_EQ(dist.global_batch_size(), 4);
  EXPECT_NE(dist.describe().find("micro_batch(4)[rank 0 of 1]"), std::string::npos)
      << dist.describe();
}

TEST(Distribute, MicroBatchRangeRule) {
  EXPECT_EQ(tnt::data::micro_batch_range(10, 4, 0),
            std::make_pair(std::int64_t{0}, std::int64_t{3}));
  EXPECT_EQ(tnt::data::micro_batch_range(10, 4, 1),
            std::make_pair(std::int64_t{3}, std::int64_t{6}));
  EXPECT_EQ(tnt::data::micro_batch_range(10, 4, 2),
            std::make_pair(std::int64_t{6}, std::int64_t{8}));
  EXPECT_EQ(tnt::data::micro_batch_range(10, 4, 3),
            std::make_pair(std::int64_t{8}, std::int64_t{10}));
  EXPECT_EQ(tnt::data::micro_batch_range(2, 4, 3),
            std::make_pair(std::int64_t{2}, std::int64_t{2}));
}

// ---- variable-length samples and batch-level nodes ----

// Sample i: {tokens int64 [len_i] with values i+1, features float [len_i, 2],
// label int64 scalar i}, len_i in 1..5 and not monotone, so micro-batches
// have different longest samples.
Dataset sentences(std::int64_t S, bool sequential) {
  auto ds =
      Dataset::from_generator(
          [](std::int64_t i) {
            const std::int64_t len = 1 + (i * 7) % 5;
            return Element{torch::full({len}, i + 1, torch::kInt64),
                           torch::full({len, 2}, 0.5 * static_cast<double>(i)), torch::tensor(i)};
          },
          S)
          .shuffle(std::max<std::int64_t>(S, 1), 5);
  if (sequential) ds = ds.filter([](const Element&) { return true; });
  return ds;
}

// `t` padded with `value` at the end of every dimension to `shape`.
torch::Tensor pad_to(const torch::Tensor& t, at::IntArrayRef shape, double value) {
  torch::Tensor out = torch::full(shape, value, t.options());
  torch::Tensor slot = out;
  for (std::int64_t d = 0; d < t.dim(); ++d) slot = slot.narrow(d, 0, t.size(d));
  slot.copy_(t);
  return out;
}

TEST(DistributeVarlen, PropertyMicroBatchesPadToTheirOwnLongestAndPadUpToTheGlobalBatch) {
  const std::vector<double> values = {-1, -2, 0};
  const auto padding = [&](bool drop) {
    return tnt::data::PaddingOptions().padding_values(values).drop_remainder(drop);
  };
  int cases = 0;
  for (int n = 1; n <= 5; ++n) {
    for (std::int64_t b : {std::int64_t{n}, std::int64_t{2 * n + 1}, std::int64_t{7}}) {
      if (b < n) continue;
      for (std::int64_t s : {3 * b, 2 * b + 1, b - 1}) {
        for (bool drop : {false, true}) {
          for (bool sequential : {false, true}) {
            SCOPED_TRACE("N=" + std::to_string(n) + " B=" + std::to_string(b) +
                         " S=" + std::to_string(s) + (drop ? " drop_remainder" : "") +
                         (sequential ? " sequential" : " random access"));
            const auto ds = sentences(s, sequential).padded_batch(b, padding(drop));
            const auto serial = collect(ds, 1);
            for (int r = 0; r < n; ++r) {
              const auto mbs = rank_pass(ds, r, n, 1);
              ASSERT_EQ(mbs.size(), serial.size()) << "rank " << r << ": steps";
              for (std::size_t k = 0; k < serial.size(); ++k) {
                const auto [lo, hi] = tnt::data::micro_batch_range(serial[k][0].size(0), n, r);
                const MicroBatch& mb = mbs[k];
                ASSERT_EQ(mb.local_size, hi - lo);
                EXPECT_EQ(mb.global_size, serial[k][0].size(0));
                // Its own longest sample: the label says which samples it has.
                std::int64_t longest = 0;
                for (std::int64_t i = 0; i < mb.local_size; ++i)
                  longest = std::max(longest, 1 + (mb.tensors[2][i].item<std::int64_t>() * 7) % 5);
                EXPECT_EQ(mb.tensors[0].size(1), mb.local_size ? longest : mb.tensors[0].size(1))
                    << "step " << k << " rank " << r << " pads to its own longest sample";
                EXPECT_EQ(mb.tensors[1].sizes().slice(2), serial[k][1].sizes().slice(2));
                // Padded up to the global batch's shape, it is rows [lo, hi).
                // (An empty micro-batch keeps the padded length of the rank's
                // previous one: its rows, none, are all there is to check.)
                for (std::size_t c = 0; c < serial[k].size(); ++c) {
                  EXPECT_EQ(mb.tensors[c].dtype(), serial[k][c].dtype());
                  EXPECT_EQ(mb.tensors[c].size(0), mb.local_size);
                  if (mb.local_size == 0) continue;
                  auto shape = serial[k][c].sizes().vec();
                  shape[0] = mb.local_size;
                  EXPECT_TRUE(torch::equal(pad_to(mb.tensors[c], shape, values[c]),
                                           serial[k][c].narrow(0, lo, hi - lo)))
                      << "step " << k << " rank " << r << " tensor " << c;
                }
              }
            }
            ++cases;
          }
        }
      }
    }
  }
  EXPECT_GT(cases, 100);
}

TEST(DistributeVarlen, FixedAndPartlyFixedPaddedShapesSplit) {
  // Fixed shapes give exactly the rows of the serial batch; -1 pads that
  // dimension to the micro-batch's longest.
  const auto fixed = sentences(17, false).padded_batch(
      5, tnt::data::PaddingOptions().padded_shapes({{6}, {6, 2}, {}}));
  const auto partly = sentences(17, false).padded_batch(
      5, tnt::data::PaddingOptions().padded_shapes({{6}, {-1, 2}, {}}));
  for (int n = 1; n <= 3; ++n) {
    std::vector<std::vector<MicroBatch>> ranks;
    for (int r = 0; r < n; ++r) ranks.push_back(rank_pass(fixed, r, n, 0));
    expect_split_of(collect(fixed, 0), ranks);
    for (int r = 0; r < n; ++r) {
      for (const auto& mb : rank_pass(partly, r, n, 0)) {
        EXPECT_EQ(mb.tensors[0].size(1), 6);
        EXPECT_EQ(mb.tensors[1].size(1), mb.local_size
                                             ? mb.tensors[0].ne(0).sum(1).max().item<std::int64_t>()
                                             : mb.tensors[1].size(1));
      }
    }
  }
}

TEST(DistributeVarlen, EnumerateAfterBatchNumbersTheGlobalBatches) {
  auto counter = std::make_shared<std::atomic<std::int64_t>>(0);
  // The batch number as a column, so the element splits into rows.
  const auto ds = samples(23, false, counter).batch(5).enumerate(3).map([](Element e) {
    e[0] = e[0].expand({e[1].size(0)}).clone();
    return e;
  });
  for (bool sequential : {false, true}) {
    const auto seq = samples(23, sequential, counter).batch(5).enumerate(3).map([](Element e) {
      e[0] = e[0].expand({e[1].size(0)}).clone();
      return e;
    });
    for (int n = 1; n <= 5; ++n) {
      SCOPED_TRACE(std::to_string(n) + " ranks" + (sequential ? " sequential" : ""));
      std::vector<std::vector<MicroBatch>> ranks;
      for (int r = 0; r < n; ++r) ranks.push_back(rank_pass(seq, r, n, 2));
      expect_split_of(collect(ds, 2), ranks);
    }
  }
}

TEST(DistributeVarlen, ZipAfterBatchKeepsTheRowsPaired) {
  auto counter = std::make_shared<std::atomic<std::int64_t>>(0);
  for (bool sequential : {false, true}) {
    const auto a = samples(23, sequential, counter);
    const auto b = samples(23, false, counter).map([](Element e) {
      e[0] = -e[0];
      return e;
    });
    const std::vector<std::pair<std::string, Dataset>> variants = {
        {"zip of batches", Dataset::zip({a.batch(5), b.batch(5)})},
        {"zip of a batch and a padded batch",
         Dataset::zip({a.batch(5), sentences(23, false).padded_batch(5)})},
        {"zip of drop_remainder batches, then a map",
         Dataset::zip({a.batch(5, true), b.batch(5, true)}).map([](Element e) {
           e[0] = e[0] + e[2];
           return e;
         })},
    };
    for (const auto& [name, ds] : variants) {
      for (int n = 1; n <= 5; ++n) {
        SCOPED_TRACE(name + " at " + std::to_string(n) + " ranks" +
                     (sequential ? " sequential" : ""));
        std::vector<std::vector<MicroBatch>> ranks;
        for (int r = 0; r < n; ++r) ranks.push_back(rank_pass(ds, r, n, 1));
        if (name == "zip of a batch and a padded batch") {
          for (int r = 0; r < n; ++r)
            for (auto& mb : ranks[r]) mb.tensors.resize(2);  // the padded part: the test above
          std::vector<Element> serial;
          for (auto e : collect(ds, 1)) serial.push_back({e[0], e[1]});
          expect_split_of(serial, ranks);
        } else {
          expect_split_of(collect(ds, 1), ranks);
        }
      }
    }
  }
  // Batch k of different lengths cannot be paired: the error says so.
  const auto unequal = Dataset::zip({Dataset::range(10).batch(4), Dataset::range(12).batch(4)});
  expect_error([&] { rank_pass(unequal, 0, 2, 0); },
               {"zip after batch", "2 samples in dataset 0", "4 in dataset 1", "drop_remainder"});
}

TEST(DistributeVarlen, UnbatchAfterBatchThenBatchAgainSplits) {
  auto counter = std::make_shared<std::atomic<std::int64_t>>(0);
  auto times_ten = [](Element e) {
    e[0] = e[0] * 10;
    return e;
  };
  const auto ds = samples(23, false, counter).batch(4).map(times_ten).unbatch().batch(6);
  const auto padded = sentences(23, false).padded_batch(4).unbatch().padded_batch(
      6, tnt::data::PaddingOptions().padded_shapes({{5}, {5, 2}, {}}));
  for (int n = 1; n <= 5; ++n) {
    SCOPED_TRACE(std::to_string(n) + " ranks");
    for (const auto* d : {&ds, &padded}) {
      std::vector<std::vector<MicroBatch>> ranks;
      for (int r = 0; r < n; ++r) ranks.push_back(rank_pass(*d, r, n, 0));
      expect_split_of(collect(*d, 0), ranks);
    }
  }
}

// pin_memory()'s route with a recording allocator in place of page-locked
// memory (which needs a GPU): every micro-batch tensor IS a buffer the
// allocator made (collated straight into it: one copy), and the values are
// the usual route's, for indexed and sequential pipelines, stacked and padded.
TEST(Distribute, CollatesIntoTheGivenMemory) {
  for (bool sequential : {false, true}) {
    for (bool padded : {false, true}) {
      const Dataset base = samples(10, sequential, std::make_shared<std::atomic<std::int64_t>>(0));
      const Dataset ds = padded ? base.padded_batch(4) : base.batch(4);
      std::vector<const void*> made;
      tnt::data::detail::SplitSpec into{1, 3, 1, [&](at::IntArrayRef sizes,
                                                     const torch::TensorOptions& options) {
        torch::Tensor t = torch::empty(sizes, options);
        made.push_back(t.data_ptr());
        return t;
      }};
      const tnt::data::detail::SplitSpec usual{1, 3, 1, nullptr};
      auto got = Dataset(ds.node()->split(into)).iterate(0);
      auto want = Dataset(ds.node()->split(usual)).iterate(0);
      int batches = 0;
      for (auto a = got.next(), b = want.next(); a || b; a = got.next(), b = want.next(), ++batches) {
        ASSERT_TRUE(a && b) << "the two routes give different numbers of micro-batches";
        ASSERT_EQ(a->size(), b->size());
        for (std::size_t c = 0; c < a->size(); ++c) EXPECT_TRUE(torch::equal((*a)[c], (*b)[c]));
        // The user's tensors (not the trailing global size) are the allocator's.
        for (std::size_t c = 0; c + 1 < a->size(); ++c) {
          EXPECT_NE(std::find(made.begin(), made.end(), (*a)[c].data_ptr()), made.end())
              << "tensor " << c << " of micro-batch " << batches << " was copied again";
        }
      }
      EXPECT_EQ(batches, 3) << "sequential " << sequential << ", padded " << padded;
    }
  }
}

// A cache keeps what it is given for good: below one, micro-batches are
// not collated into the given (page-locked) memory.
TEST(Distribute, ACachedPipelineIsNotCollatedIntoTheGivenMemory) {
  const Dataset ds =
      samples(10, false, std::make_shared<std::atomic<std::int64_t>>(0)).batch(4).cache();
  int made = 0;
  const tnt::data::detail::SplitSpec into{
      1, 3, 1, [&](at::IntArrayRef sizes, const torch::TensorOptions& options) {
        ++made;
        return torch::empty(sizes, options);
      }};
  auto it = Dataset(ds.node()->split(into)).iterate(0);
  int batches = 0;
  while (it.next()) ++batches;
  EXPECT_EQ(batches, 3);
  EXPECT_EQ(made, 0) << "a cached micro-batch was collated into the given memory";
}

// pin_memory()'s collation with samples already on a device (a user's CUDA
// tensors, fit(x_cuda, y_cuda)): they are stacked where they are, since
// ATen refuses to stack device tensors into host memory. The meta device
// stands in for a GPU here; on a GPU machine the host case is page-locked.
TEST(Distribute, PinMemoryCollatesDeviceSamplesWhereTheyAre) {
  using tnt::data::detail::pinned_or_in_place;
  const auto on_device = torch::TensorOptions().dtype(torch::kFloat32).device(torch::kMeta);
  const std::vector<tnt::data::Element> samples = {{torch::empty({3}, on_device)},
                                                   {torch::empty({3}, on_device)}};
  const tnt::data::Element batch =
      tnt::data::detail::stack_elements(samples, "batch(2)", pinned_or_in_place);
  ASSERT_EQ(batch.size(), 1u);
  EXPECT_EQ(batch[0].device().type(), torch::kMeta);
  EXPECT_EQ(batch[0].sizes(), (std::vector<std::int64_t>{2, 3}));
  if (torch::cuda::is_available()) {
    EXPECT_TRUE(pinned_or_in_place({2, 3}, torch::TensorOptions()).is_pinned());
  }
}

// pin_memory's read-ahead hands out pinned, dense host tensors whatever the
// steps above the collation did (a map's new tensors, a strided view), split
// or not, with a user's prefetch above the batch or without: the training
// thread then copies them to the GPU without pinning or synchronising
// (train/engine/engine_state.cpp, on_device). Page-locked memory needs CUDA:
// on a GPU machine only (scripts/device-check.sh, unit_tests).
TEST(Distribute, PinnedReadAheadPinsWhatTheStepsAboveTheCollationMade) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "page-locked memory needs a GPU";
  const auto made_anew = [](Element e) {
    e[0] = e[0].to(torch::kDouble);  // a new tensor, pageable
    e[1] = e[1].narrow(1, 0, 1);     // a view of the collated batch with gaps: not dense
    return e;
  };
  const Dataset plain = tnt::data::Dataset::from_tensor_slices(
                            {torch::arange(24, torch::kFloat).view({12, 2}),
                             torch::arange(24).view({12, 2})})
                            .batch(6);
  // With the GPU named (as fit() does), and without (pinning all the same).
  const std::vector<DistributeOptions> pinning = {
      DistributeOptions().pin_memory(true).pin_memory_device(torch::Device(torch::kCUDA, 0)),
      DistributeOptions().pin_memory(true)};
  for (const Dataset& ds : {plain.map(made_anew), plain.prefetch(2).map(made_anew),
                            plain.map(made_anew).prefetch(2)}) {
    for (const auto& [split, options] : {std::pair{true, pinning[0]}, std::pair{false, pinning[0]},
                                          std::pair{true, pinning[1]}}) {
      auto dist = tnt::data::distribute(ds, DistributeOptions(options).enabled(split).rank(0).size(2));
      auto it = dist.iterate(0);
      int batches = 0;
      while (auto mb = it.next()) {
        ++batches;
        for (const torch::Tensor& t : mb->tensors) {
          EXPECT_TRUE(t.is_pinned() && t.is_non_overlapping_and_dense())
              << "split " << split << ": a tensor of " << t.sizes() << " is not pinned and dense";
        }
        EXPECT_EQ(mb->tensors.at(0).scalar_type(), torch::kDouble);
      }
      EXPECT_EQ(batches, 2);
    }
  }
  // A user's prefetch above the batch, split for pinned read-ahead, pins on
  // its own thread (iterated here without distribute's read-ahead on top).
  const tnt::data::detail::SplitSpec pinned_spec{
      0, 2, 1, tnt::data::detail::pinned_or_in_place, {true, torch::Device(torch::kCUDA, 0)}};
  auto own = Dataset(plain.map(made_anew).prefetch(2).node()->split(pinned_spec)).iterate(0);
  int own_batches = 0;
  while (auto e = own.next()) {
    ++own_batches;
    EXPECT_TRUE(e->at(0).is_pinned() && e->at(1).is_pinned() &&
                e->at(1).is_non_overlapping_and_dense())
        << "the user's prefetch did not pin";
  }
  EXPECT_EQ(own_batches, 2);
  // Pinned and dense already: handed on, not copied again.
  const torch::Tensor pinned = torch::ones({4}, torch::TensorOptions().pinned_memory(true));
  EXPECT_TRUE(tnt::data::detail::pinned_dense(pinned).is_same(pinned));
  const torch::Tensor every_other = pinned.slice(0, 0, 4, 2);
  const torch::Tensor dense = tnt::data::detail::pinned_dense(every_other);
  EXPECT_TRUE(dense.is_pinned() && dense.is_contiguous() && torch::equal(dense, every_other));
}

// The rows-less batch kept to stand for dropped batches holds none of the
// batch's storage (with pin_memory, page-locked for as long as it is kept).
TEST(Distribute, EmptyRowsKeepNothingOfTheBatch) {
  const tnt::data::Element batch = {torch::ones({4, 3}), torch::arange(4)};
  const tnt::data::Element none = tnt::data::detail::empty_rows(batch);
  ASSERT_EQ(none.size(), 2u);
  EXPECT_EQ(none[0].sizes(), (std::vector<std::int64_t>{0, 3}));
  EXPECT_EQ(none[1].sizes(), (std::vector<std::int64_t>{0}));
  EXPECT_EQ(none[1].scalar_type(), torch::kLong);
  for (std::size_t c = 0; c < batch.size(); ++c) EXPECT_FALSE(none[c].is_alias_of(batch[c]));
}

}  // namespace
