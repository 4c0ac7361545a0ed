// Threads of a pass (prefetch, parallel map) stop cleanly when iteration
// stops early, and failures on them reach the consumer. Run these under
// AddressSanitizer too (docs/data.md): a leak, a use after free or a thread
// left running shows there; here a hang fails by the test's timeout.
#include <atomic>
#include <chrono>
#include <thread>

#include "test_util.h"

namespace {

using namespace tnt_test;
using Clock = std::chrono::steady_clock;
using Counter = std::shared_ptr<std::atomic<std::int64_t>>;

Dataset endless(Counter produced, int sleep_us = 0) {
  return Dataset::from_generator(
      [produced, sleep_us](std::int64_t i) {
        if (sleep_us) std::this_thread::sleep_for(std::chrono::microseconds(sleep_us));
        ++*produced;
        return Element{torch::full({4}, i)};
      },
      tnt::data::kInfiniteCardinality);
}

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

TEST(Shutdown, PrefetchStopsItsThreadWhenIterationStopsEarly) {
  auto produced = std::make_shared<std::atomic<std::int64_t>>(0);
  const auto ds = endless(produced, 200).prefetch(4);
  const auto start = Clock::now();
  {
    auto it = ds.iterate(0);
    for (int i = 0; i < 3; ++i) ASSERT_TRUE(it.next().has_value());
  }  // the iterator (and its thread) is gone here
  EXPECT_LT(seconds_since(start), 2.0);
  const auto after = produced->load();
  EXPECT_LE(after, 3 + 4 + 1)
      << "at most the queue plus the element in progress were produced ahead";
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(produced->load(), after) << "nothing is produced after the iterator is destroyed";
}

TEST(Shutdown, ParallelMapLeavesNoWorkBehindWhenStoppedEarly) {
  auto mapped = std::make_shared<std::atomic<std::int64_t>>(0);
  const auto ds = Dataset::range(1000).map(
      [mapped](Element e) {
        ++*mapped;
        return e;
      },
      tnt::data::MapOptions().num_workers(4));
  {
    auto it = ds.batch(10).iterate(0);
    ASSERT_TRUE(it.next());
    ASSERT_TRUE(it.next());
  }
  EXPECT_EQ(mapped->load(), 20) << "batches map exactly their samples";
  mapped->store(0);
  {
    auto it = ds.iterate(0);
    for (int i = 0; i < 3; ++i) ASSERT_TRUE(it.next());
  }
  EXPECT_EQ(mapped->load(), 3);
  mapped->store(0);
  {
    auto it = ds.filter([](const Element&) { return true; })
                  .map([](Element e) { return e; }, tnt::data::MapOptions().num_workers(4))
                  .iterate(0);
    ASSERT_TRUE(it.next());
  }
  EXPECT_EQ(mapped->load(), 4)
      << "element-wise over a stream, one group of num_workers is read ahead";
}

TEST(Shutdown, PrefetchOverParallelMapStoppedEarlyManyTimes) {
  auto produced = std::make_shared<std::atomic<std::int64_t>>(0);
  const auto ds =
      endless(produced)
          .map([](Element e) { return Element{e[0] * 2}; }, tnt::data::MapOptions().num_workers(3))
          .batch(8)
          .prefetch(2)
          .map([](Element e) { return e; }, tnt::data::MapOptions().num_workers(2))
          .prefetch(1);
  const auto start = Clock::now();
  for (int round = 0; round < 50; ++round) {
    auto it = ds.iterate(round);
    const auto first = it.next();
    ASSERT_TRUE(first.has_value());
    EXPECT_EQ(first->at(0).size(0), 8);
  }
  EXPECT_LT(seconds_since(start), 10.0);
}

TEST(Shutdown, AnExceptionOnThePrefetchThreadArrivesAfterTheElementsBeforeIt) {
  const auto ds = Dataset::from_generator(
                      [](std::int64_t i) -> Element {
                        if (i == 5) throw std::runtime_error("generator failed at 5");
                        return {torch::tensor(i)};
                      },
                      10)
                      .prefetch(3);
  auto it = ds.iterate(0);
  for (std::int64_t i = 0; i < 5; ++i) {
    auto e = it.next();
    ASSERT_TRUE(e.has_value());
    EXPECT_EQ(e->at(0).item<std::int64_t>(), i);
  }
  try {
    it.next();
    ADD_FAILURE() << "the generator's exception did not arrive";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "generator failed at 5");
  }
  EXPECT_FALSE(it.next().has_value()) << "after the failure the pass is over";
}

TEST(Shutdown, AnExceptionOnAMapWorkerStopsTheBatchAndIsRethrown) {
  auto mapped = std::make_shared<std::atomic<std::int64_t>>(0);
  auto failing = std::make_shared<std::atomic<bool>>(false);
  // Samples after 3 wait until 3 is failing (at most 10 s), then take 20 ms
  // each: the other workers cannot run through all 64 before the failure
  // is seen, however late a loaded machine runs the failing thread (60
  // samples on 3 workers: 400 ms).
  const auto ds = Dataset::range(64)
                      .map(
                          [mapped, failing](Element e) {
                            ++*mapped;
                            const std::int64_t i = e[0].item<std::int64_t>();
                            if (i == 3) {
                              failing->store(true);
                              throw std::runtime_error("worker failed");
                            }
                            const auto deadline =
                                std::chrono::steady_clock::now() + std::chrono::seconds(10);
                            while (i > 3 && !failing->load() &&
                                   std::chrono::steady_clock::now() < deadline)
                              std::this_thread::sleep_for(std::chrono::milliseconds(1));
                            std::this_thread::sleep_for(std::chrono::milliseconds(20));
                            return e;
                          },
                          tnt::data::MapOptions().num_workers(4))
                      .batch(64)
                      .prefetch(1);
  auto it = ds.iterate(0);
  EXPECT_THROW(it.next(), std::runtime_error);
  EXPECT_LT(mapped->load(), 64) << "the workers stop taking samples after a failure";
}

}  // namespace
