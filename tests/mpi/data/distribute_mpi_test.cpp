// Distribution across real ranks: each rank iterates its own micro-batches;
// allgatherv of them (rank order) must equal the serial global batch, every
// rank must run the same number of steps, and each rank must map only its
// own share of the samples.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <sstream>

#include <tarantella/tarantella.h>

#include "rank_share.h"

namespace {

using tnt::data::Dataset;
using tnt::data::Element;
using Counter = std::shared_ptr<std::atomic<std::int64_t>>;

Dataset pipeline(std::int64_t samples, bool sequential, Counter counter) {
  auto ds = Dataset::from_tensor_slices(
                {torch::arange(samples * 4, torch::kFloat32).reshape({samples, 2, 2}),
                 torch::arange(samples, torch::kInt64)})
                .shuffle(samples);  // the default seed on every rank
  if (sequential) ds = ds.filter([](const Element&) { return true; });
  return ds.map([counter](Element e) {
    ++*counter;
    e[0] = e[0].sqrt();
    return e;
  });
}

std::int64_t all_equal_or_fail(std::int64_t value, const char* what) {
  const auto v = torch::tensor({value}, torch::kInt64);
  const auto lo = tnt::comm::allreduce(v.clone(), tnt::comm::ReduceOp::Min).item<std::int64_t>();
  const auto hi = tnt::comm::allreduce(v.clone(), tnt::comm::ReduceOp::Max).item<std::int64_t>();
  EXPECT_EQ(lo, hi) << what << " differs between ranks: from " << lo << " to " << hi;
  return value;
}

TEST(DistributeMpi, GatheredMicroBatchesAreTheGlobalBatchesAndEachRankMapsItsShare) {
  const int n = tnt::get_size();
  const int rank = tnt::get_rank();
  for (std::int64_t samples :
       {std::int64_t{60}, std::int64_t{2 * 7 + 1}, std::int64_t{2 * (2 * n + 1) + n - 1}}) {
    for (std::int64_t batch : {std::int64_t{n}, std::int64_t{2 * n + 1}, std::int64_t{11}}) {
      if (batch < n) continue;
      for (bool sequential : {false, true}) {
        SCOPED_TRACE("S=" + std::to_string(samples) + " B=" + std::to_string(batch) +
                     (sequential ? " sequential" : " random access") + " rank " +
                     std::to_string(rank) + " of " + std::to_string(n));
        auto mapped = std::make_shared<std::atomic<std::int64_t>>(0);
        auto serial_mapped = std::make_shared<std::atomic<std::int64_t>>(0);
        const auto dist =
            tnt::data::distribute(pipeline(samples, sequential, mapped).batch(batch).prefetch(2));
        ASSERT_EQ(dist.size(), n);
        ASSERT_EQ(dist.rank(), rank);
        auto it = dist.iterate(3);
        auto serial = pipeline(samples, sequential, serial_mapped).batch(batch).iterate(3);
        std::int64_t steps = 0;
        for (;; ++steps) {
          auto mb = it.next();
          auto global = serial.next();
          if (all_equal_or_fail(mb.has_value(), "having a step") == 0) {
            EXPECT_FALSE(global.has_value()) << "the ranks stopped before the serial pipeline";
            break;
          }
          ASSERT_TRUE(global.has_value()) << "step " << steps << " beyond the serial pipeline";
          EXPECT_EQ(mb->step, steps);
          EXPECT_EQ(mb->global_size, global->at(0).size(0));
          const auto x = tnt::comm::allgatherv(mb->tensors.at(0).contiguous());
          const auto y = tnt::comm::allgatherv(mb->tensors.at(1).contiguous());
          EXPECT_TRUE(torch::equal(x, global->at(0)))
              << "step " << steps << ": gathered images differ";
          EXPECT_TRUE(torch::equal(y, global->at(1)))
              << "step " << steps << ": gathered labels " << y << " but the global batch has "
              << global->at(1);
        }
        all_equal_or_fail(steps, "the number of steps");
        EXPECT_EQ(dist.cardinality(), sequential ? tnt::data::kUnknownCardinality : steps);
        EXPECT_EQ(mapped->load(), tnt_test::rank_share(samples, batch, n, rank))
            << "rank " << rank << " mapped " << mapped->load() << " of " << samples << " samples";
        const auto counts = tnt::comm::allgather(torch::tensor({mapped->load()}, torch::kInt64));
        EXPECT_EQ(counts.sum().item<std::int64_t>(), samples)
            << "together the ranks map each sample once";
        if (rank == 0 && !sequential && samples == 60) {
          std::ostringstream line;
          line << "[ map count ] S=" << samples << " B=" << batch << " N=" << n
               << ": samples mapped per rank";
          for (std::int64_t r = 0; r < n; ++r) line << " " << counts[r].item<std::int64_t>();
          std::printf("%s (serial pipeline: %ld)\n", line.str().c_str(),
                      static_cast<long>(serial_mapped->load()));
        }
      }
    }
  }
}

TEST(DistributeMpi, TooSmallAGlobalBatchFailsOnEveryRankWithTheNumbers) {
  const int n = tnt::get_size();
  if (n == 1) GTEST_SKIP() << "every batch size is at least 1 rank";
  try {
    tnt::data::distribute(Dataset::range(10).batch(n - 1));
    ADD_FAILURE() << "no error for a global batch of " << n - 1 << " at " << n << " ranks";
  } catch (const tnt::Error& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("global batch size " + std::to_string(n - 1)), std::string::npos)
        << message;
    EXPECT_NE(message.find("number of ranks " + std::to_string(n)), std::string::npos) << message;
    EXPECT_NE(message.find("[tarantella rank " + std::to_string(tnt::get_rank()) + "]"),
              std::string::npos)
        << message;
  }
}

}  // namespace
