// Every collective x dtype x element count against exact expected values,
// computed on every rank by replaying all ranks' inputs locally. Inputs are
// small integers, so even float16/bfloat16 sums and products are exact.
#include <gtest/gtest.h>

#include <unistd.h>

#include <chrono>
#include <fstream>
#include <functional>
#include <string>
#include <thread>

#include <tarantella/tarantella.h>

namespace {

using tnt::comm::ReduceOp;

// At 2 and 4 ranks, 1000 is carried with the fingerprint exchange; 5000
// goes as a whole-buffer exchange (float32, 20 KB) or halving (float64);
// 100001 halving with odd halves; 1 << 20 in several 1 MiB pieces (float32,
// float64) or one (uint8). At 3 ranks everything above carried size is
// MPI_Allreduce.
const std::vector<std::int64_t> kCounts = {0, 1, 7, 1000, 5000, 100001, 1 << 20};
const std::vector<torch::ScalarType> kDtypes = {torch::kFloat32, torch::kFloat64,
                                                torch::kFloat16, torch::kBFloat16,
                                                torch::kInt32,   torch::kInt64,
                                                torch::kUInt8,   torch::kBool};
const std::vector<ReduceOp> kOps = {ReduceOp::Sum, ReduceOp::Average, ReduceOp::Min,
                                    ReduceOp::Max, ReduceOp::Product};

// The largest count is there for the transfer's size (several 1 MiB pieces,
// or one): a path that depends on bytes, not on the dtype's arithmetic,
// which the smaller counts cover for every dtype. So it runs for one dtype
// of each element size, and in the second (cached) pass for float32 only:
// at 8 ranks on 2 cores the other four dtypes cost more than half of the
// suite's collectives time and reach no other path.
bool runs_at(torch::ScalarType dtype, std::int64_t count, bool cached = false) {
  if (count < (1 << 20)) return true;
  if (cached) return dtype == torch::kFloat32;
  return dtype == torch::kFloat32 || dtype == torch::kFloat64 || dtype == torch::kFloat16 ||
         dtype == torch::kUInt8;
}

bool supported(torch::ScalarType dtype, ReduceOp op) {
  if (dtype == torch::kBool) return op == ReduceOp::Min || op == ReduceOp::Max;
  if (op == ReduceOp::Average) return c10::isFloatingType(dtype);
  return true;
}

// Rank r's input for `op`: sums stay <= 70, products <= 16, all exact.
torch::Tensor input(ReduceOp op, torch::ScalarType dtype, std::int64_t count, int rank) {
  const auto i = torch::arange(count, torch::kInt64);
  if (dtype == torch::kBool) return ((i + rank) % 3 != 0);
  torch::Tensor v;
  switch (op) {
    case ReduceOp::Sum:
    case ReduceOp::Average: v = (i % 7 + 1) * (rank + 1); break;
    case ReduceOp::Min:
    case ReduceOp::Max: v = i % 7 + 1 + rank; break;
    case ReduceOp::Product: v = (i + rank) % 2 + 1; break;
  }
  return v.to(dtype);
}

torch::Tensor expected_reduction(ReduceOp op, torch::ScalarType dtype, std::int64_t count) {
  const int n = tnt::get_size();
  torch::Tensor acc = input(op, dtype, count, 0);
  for (int r = 1; r < n; ++r) {
    const torch::Tensor x = input(op, dtype, count, r);
    switch (op) {
      case ReduceOp::Sum:
      case ReduceOp::Average: acc = acc + x; break;
      case ReduceOp::Min: acc = dtype == torch::kBool ? acc.logical_and(x) : torch::min(acc, x); break;
      case ReduceOp::Max: acc = dtype == torch::kBool ? acc.logical_or(x) : torch::max(acc, x); break;
      case ReduceOp::Product: acc = acc * x; break;
    }
  }
  if (op == ReduceOp::Average) acc = acc.div(n);
  return acc.to(dtype);
}

std::string label(torch::ScalarType dtype, std::int64_t count, const char* what) {
  return std::string(what) + " dtype=" + c10::toString(dtype) + " count=" + std::to_string(count) +
         " ranks=" + std::to_string(tnt::get_size()) + " rank=" + std::to_string(tnt::get_rank());
}

// The micro-batch rule used by reduce_scatter.
std::vector<std::int64_t> split_rows(std::int64_t total, int n) {
  std::vector<std::int64_t> rows(n, total / n);
  for (int r = 0; r < total % n; ++r) ++rows[r];
  return rows;
}

TEST(Collectives, AllreduceEveryOpDtypeAndCount) {
  // Twice: first through the full handshake, then with the descriptor in
  // the response cache (small tensors then ride along with the fingerprint
  // exchange at 2 and 4 ranks).
  for (int pass = 0; pass < 2; ++pass) {
  for (ReduceOp op : kOps) {
    for (auto dtype : kDtypes) {
      if (!supported(dtype, op)) continue;
      for (auto count : kCounts) {
        if (!runs_at(dtype, count, pass == 1)) continue;
        torch::Tensor t = input(op, dtype, count, tnt::get_rank());
        const torch::Tensor result = tnt::comm::allreduce(t, op);
        const std::string what = label(dtype, count, "allreduce") + " op=" + to_string(op) +
                                 (pass ? " (cached)" : "");
        ASSERT_EQ(result.data_ptr(), t.data_ptr()) << what << ": not in place";
        ASSERT_TRUE(torch::equal(result, expected_reduction(op, dtype, count))) << what;
      }
    }
  }
  }
}

TEST(Collectives, AllreduceOfRandomFloatsIsBitwiseEqualOnEveryRank) {
  // Inexact sums: whatever order a path adds in, every rank must end with
  // the same bits (the weights of data-parallel replicas stay equal).
  // Counts cover each path of a power-of-two group: carried (1000), whole
  // buffers (10000 float32), halving (100001, float64 16384), several
  // 1 MiB pieces (300000); at 3 ranks, MPI_Allreduce.
  for (auto dtype : {torch::kFloat32, torch::kFloat64}) {
    for (std::int64_t count : {1000, 10000, 16384, 100001, 300000}) {
      for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Average, ReduceOp::Max}) {
        torch::manual_seed(1234 + tnt::get_rank());
        torch::Tensor t = torch::randn({count}, dtype);
        const torch::Tensor result = tnt::comm::allreduce(t, op);
        const torch::Tensor rank0 = tnt::comm::broadcast(result.clone(), 0);
        const std::string what = label(dtype, count, "random allreduce") + " op=" + to_string(op);
        ASSERT_TRUE(torch::equal(result, rank0)) << what << ": differs from rank 0's result";
        // And it is the reduction: against a local replay, up to rounding.
        torch::Tensor replay = torch::zeros({count}, dtype);
        for (int r = 0; r < tnt::get_size(); ++r) {
          torch::manual_seed(1234 + r);
          const torch::Tensor x = torch::randn({count}, dtype);
          replay = op == ReduceOp::Max ? (r == 0 ? x : torch::max(replay, x)) : replay + x;
        }
        if (op == ReduceOp::Average) replay = replay / tnt::get_size();
        ASSERT_TRUE(torch::allclose(result, replay, 1e-5, 1e-5)) << what;
      }
    }
  }
}

TEST(Collectives, UnsupportedOpDtypeCombinationsRaiseOnEveryRank) {
  EXPECT_THROW(tnt::comm::allreduce(torch::ones({3}, torch::kBool), ReduceOp::Sum), tnt::Error);
  EXPECT_THROW(tnt::comm::allreduce(torch::ones({3}, torch::kInt32), ReduceOp::Average),
               tnt::Error);
  // The communicator is still in step afterwards.
  auto t = torch::ones({3});
  EXPECT_TRUE(torch::equal(tnt::comm::allreduce(t), torch::full({3}, float(tnt::get_size()))));
}

TEST(Collectives, BroadcastFromFirstAndLastRank) {
  const int n = tnt::get_size();
  for (int root : {0, n - 1}) {
    for (auto dtype : kDtypes) {
      for (auto count : kCounts) {
        if (!runs_at(dtype, count)) continue;
        const torch::Tensor source = input(ReduceOp::Sum, dtype, count, root);
        torch::Tensor t =
            tnt::get_rank() == root ? source.clone() : torch::zeros({count}, dtype);
        tnt::comm::broadcast(t, root);
        ASSERT_TRUE(torch::equal(t, source))
            << label(dtype, count, "broadcast") << " root=" << root;
      }
    }
  }
}

TEST(Collectives, AllgatherConcatenatesInRankOrder) {
  const int n = tnt::get_size();
  for (auto dtype : kDtypes) {
    for (auto count : kCounts) {
      if (!runs_at(dtype, count)) continue;
      std::vector<torch::Tensor> parts;
      for (int r = 0; r < n; ++r) parts.push_back(input(ReduceOp::Sum, dtype, count, r));
      const torch::Tensor got = tnt::comm::allgather(parts[tnt::get_rank()]);
      ASSERT_TRUE(torch::equal(got, torch::cat(parts))) << label(dtype, count, "allgather");
    }
  }
  // Higher-dimensional tensors gather along dimension 0.
  const torch::Tensor mine = torch::full({2, 3}, tnt::get_rank(), torch::kInt64);
  const torch::Tensor got = tnt::comm::allgather(mine);
  ASSERT_EQ(got.sizes(), (std::vector<std::int64_t>{2 * n, 3}));
  for (int r = 0; r < n; ++r) {
    ASSERT_TRUE(torch::equal(got.slice(0, 2 * r, 2 * r + 2), torch::full({2, 3}, r, torch::kInt64)));
  }
}

TEST(Collectives, AllgathervWithDifferentFirstDimensions) {
  const int n = tnt::get_size();
  for (auto dtype : kDtypes) {
    for (auto count : kCounts) {
      if (!runs_at(dtype, count)) continue;
      // Rank r holds count + r rows of width 1, except the last rank which
      // holds none when count is 0: empty contributions must work too.
      std::vector<torch::Tensor> parts;
      for (int r = 0; r < n; ++r) {
        const std::int64_t rows = (count == 0 && r == n - 1) ? 0 : count + r;
        parts.push_back(input(ReduceOp::Sum, dtype, rows, r));
      }
      const torch::Tensor got = tnt::comm::allgatherv(parts[tnt::get_rank()]);
      ASSERT_TRUE(torch::equal(got, torch::cat(parts))) << label(dtype, count, "allgatherv");
    }
  }
  const torch::Tensor rows = torch::full({tnt::get_rank() + 1, 2}, tnt::get_rank(), torch::kInt32);
  const torch::Tensor got = tnt::comm::allgatherv(rows);
  ASSERT_EQ(got.size(0), n * (n + 1) / 2);
  ASSERT_EQ(got.size(1), 2);
}

TEST(Collectives, ReduceScatterGivesEachRankItsSlice) {
  const int n = tnt::get_size();
  const int rank = tnt::get_rank();
  for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Max, ReduceOp::Average}) {
    for (auto dtype : kDtypes) {
      if (!supported(dtype, op)) continue;
      for (auto count : kCounts) {
        if (!runs_at(dtype, count)) continue;
        const torch::Tensor full = expected_reduction(op, dtype, count);
        const auto rows = split_rows(count, n);
        std::int64_t start = 0;
        for (int r = 0; r < rank; ++r) start += rows[r];
        const torch::Tensor got = tnt::comm::reduce_scatter(input(op, dtype, count, rank), op);
        ASSERT_TRUE(torch::equal(got, full.slice(0, start, start + rows[rank])))
            << label(dtype, count, "reduce_scatter") << " op=" << to_string(op);
      }
    }
  }
}

TEST(Collectives, LargeReduceScatterGoesInRoundsAndStaysExact) {
  // Blocks above 4 MiB in all per call go in rounds (packed parts of every
  // rank's block): uneven blocks, a last round that some ranks sit out.
  const int n = tnt::get_size();
  const std::int64_t count = (3 << 20) + 5;
  for (auto dtype : {torch::kFloat32, torch::kFloat64}) {
    const torch::Tensor full = expected_reduction(ReduceOp::Sum, dtype, count);
    const auto rows = split_rows(count, n);
    std::int64_t start = 0;
    for (int r = 0; r < tnt::get_rank(); ++r) start += rows[r];
    const torch::Tensor got =
        tnt::comm::reduce_scatter(input(ReduceOp::Sum, dtype, count, tnt::get_rank()));
    ASSERT_TRUE(torch::equal(got, full.slice(0, start, start + rows[tnt::get_rank()])))
        << label(dtype, count, "reduce_scatter");
  }
}

TEST(Collectives, ReduceScatterLeavesItsInputAsItWas) {
  for (auto count : {std::int64_t{7}, std::int64_t{(1 << 20) + 3}}) {
    const torch::Tensor mine = input(ReduceOp::Sum, torch::kFloat32, count, tnt::get_rank());
    const torch::Tensor before = mine.clone();
    tnt::comm::reduce_scatter(mine);
    ASSERT_TRUE(torch::equal(mine, before)) << label(torch::kFloat32, count, "reduce_scatter");
  }
}

TEST(Collectives, ReduceScatterOfRandomFloatsIsTheLargeAllreducesSliceBitwise) {
  // In power-of-two groups both go as recursive halving with the same
  // partners (rank ^ N/2 first), so a sharded optimizer sees exactly the
  // sums an unsharded one sees, where every allreduce piece is above the
  // whole-buffer limit (here the last piece holds 100003 elements too).
  const int n = tnt::get_size();
  if ((n & (n - 1)) != 0) GTEST_SKIP() << "MPI's own algorithms at " << n << " ranks";
  const std::int64_t count = (1 << 20) + 100003;  // several pieces, uneven blocks
  torch::manual_seed(1000 + static_cast<std::uint64_t>(tnt::get_rank()));
  const torch::Tensor mine = torch::randn({count});
  const torch::Tensor summed = tnt::comm::allreduce(mine.clone());
  const torch::Tensor got = tnt::comm::reduce_scatter(mine);
  const auto rows = split_rows(count, n);
  std::int64_t start = 0;
  for (int r = 0; r < tnt::get_rank(); ++r) start += rows[r];
  ASSERT_TRUE(torch::equal(got, summed.slice(0, start, start + rows[tnt::get_rank()])))
      << label(torch::kFloat32, count, "reduce_scatter");
}

TEST(Collectives, BarrierWaitsForTheLastRank) {
  // The master arrives 300 ms late; nobody may leave the barrier before it
  // arrived. Compared with the master's own arrival time (one monotonic
  // clock for the processes of one host), not with a delay measured on each
  // rank, which a rank that is itself late to leave the first barrier on a
  // loaded machine would shorten.
  tnt::comm::barrier();  // line everyone up first
  if (tnt::is_master_rank()) std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const auto ns = [] {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  };
  const std::int64_t arrived = ns();
  tnt::comm::barrier();
  const std::int64_t left = ns();
  // One clock: the same host name and the same boot.
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  std::string boot;
  std::ifstream("/proc/sys/kernel/random/boot_id") >> boot;
  const auto host_key =
      static_cast<std::int64_t>(std::hash<std::string>()(std::string(host) + "/" + boot) >> 1);
  const torch::Tensor master =
      tnt::comm::broadcast(torch::tensor({arrived, host_key}, torch::kInt64), 0);
  if (master[1].item<std::int64_t>() != host_key) return;  // another host's clock
  EXPECT_GE(left, master[0].item<std::int64_t>())
      << "rank " << tnt::get_rank() << " left the barrier before the master arrived";
}

TEST(Collectives, AsyncRequestsCompleteInAnyWaitOrder) {
  const int n = tnt::get_size();
  std::vector<torch::Tensor> tensors;
  std::vector<tnt::comm::Handle> handles;
  for (int k = 0; k < 8; ++k) {
    tensors.push_back(torch::full({1000 * (k + 1)}, float(k + 1)));
    handles.push_back(tnt::comm::allreduce_async(tensors.back()));
  }
  for (int k = 7; k >= 0; --k) {
    const torch::Tensor got = handles[k].wait();
    ASSERT_TRUE(torch::equal(got, torch::full({1000 * (k + 1)}, float((k + 1) * n))));
  }
}

}  // namespace
