// The verdict on a table of descriptors is a pure function; these tests pin
// down what each rank is told without starting any processes.
#include <gtest/gtest.h>

#include "comm/dtype.h"
#include "comm/check/handshake.h"

namespace {

using namespace tnt::comm;

Descriptor allreduce(DType dtype, std::initializer_list<std::int64_t> sizes,
                     ReduceOp op = ReduceOp::Sum) {
  Descriptor d;
  d.seq = 7;
  d.collective = static_cast<int>(Collective::Allreduce);
  d.op = static_cast<int>(op);
  d.dtype = static_cast<int>(dtype);
  d.ndim = static_cast<int>(sizes.size());
  d.numel = 1;
  int i = 0;
  for (auto s : sizes) {
    d.sizes[i++] = s;
    d.numel *= s;
  }
  return d;
}

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

TEST(HandshakeVerdict, ConsistentTableIsAccepted) {
  const auto d = allreduce(DType::Float32, {1000});
  EXPECT_EQ(check_table({d, d, d}), "");
}

TEST(HandshakeVerdict, DtypeMismatchSaysWhatEachRankHad) {
  const auto f32 = allreduce(DType::Float32, {1000});
  const auto f64 = allreduce(DType::Float64, {1000});
  const std::string v = check_table({f32, f64, f32});
  EXPECT_TRUE(contains(v, "collective #7 mismatch")) << v;
  EXPECT_TRUE(contains(v, "ranks 0,2 called allreduce(sum) float32 [1000]")) << v;
  EXPECT_TRUE(contains(v, "rank 1 called allreduce(sum) float64 [1000]")) << v;
}

// Over NCCL a host tensor goes over MPI and a GPU tensor over NCCL: ranks
// that disagree would wait in different transports, so the handshake names
// them (and MPI-only groups, where both go through host memory, never set
// the GPU payload).
TEST(HandshakeVerdict, GpuAndHostPayloadsOverNcclAreAMismatch) {
  const auto host = allreduce(DType::Float32, {16});
  Descriptor gpu = host;
  gpu.payload = 1;
  EXPECT_EQ(check_table({gpu, gpu}), "");
  EXPECT_NE(fingerprint(host), fingerprint(gpu));
  const std::string v = check_table({gpu, host, gpu});
  EXPECT_TRUE(contains(v, "ranks 0,2 called allreduce(sum) float32 [16] on the GPU (NCCL)")) << v;
  EXPECT_TRUE(contains(v, "rank 1 called allreduce(sum) float32 [16]")) << v;
  EXPECT_TRUE(contains(v, "over NCCL with the tensor on the GPU on every rank or on none")) << v;
  EXPECT_FALSE(contains(check_table({host, allreduce(DType::Float64, {16})}), "NCCL"));
}

TEST(HandshakeVerdict, CountOpAndKindMismatchesAreCaught) {
  const auto base = allreduce(DType::Float32, {7});
  EXPECT_TRUE(contains(check_table({base, allreduce(DType::Float32, {8})}), "[8]"));
  EXPECT_TRUE(contains(check_table({base, allreduce(DType::Float32, {7}, ReduceOp::Max)}),
                       "allreduce(max)"));
  Descriptor bcast = base;
  bcast.collective = static_cast<int>(Collective::Broadcast);
  bcast.op = -1;
  bcast.root = 0;
  EXPECT_TRUE(contains(check_table({base, bcast}), "broadcast(root 0)"));
  Descriptor other_root = bcast;
  other_root.root = 1;
  EXPECT_TRUE(contains(check_table({bcast, other_root}), "broadcast(root 1)"));
}

TEST(HandshakeVerdict, AllgathervAllowsDifferentFirstDimensionOnly) {
  auto rows = [](std::int64_t n, std::int64_t width) {
    Descriptor d = allreduce(DType::Int64, {n, width});
    d.collective = static_cast<int>(Collective::Allgatherv);
    d.op = -1;
    return d;
  };
  EXPECT_EQ(check_table({rows(1, 3), rows(5, 3), rows(0, 3)}), "");
  EXPECT_TRUE(contains(check_table({rows(1, 3), rows(1, 4)}), "mismatch"));
}

// A timeout on a job over several machines names where the missing rank
// runs (e.g. a host cut off by its link).
TEST(HandshakeVerdict, MissingRanksAreNamedWithTheirHosts) {
  EXPECT_EQ(rank_list({1}, {"h0", "h1"}), "rank 1 (on host h1)");
  EXPECT_EQ(rank_list({1, 3}, {"a", "b", "c", "d"}), "ranks 1,3 (on hosts b,d)");
  EXPECT_EQ(rank_list({1}, {}), "rank 1") << "hosts unknown: the ranks alone";
  EXPECT_EQ(rank_list({2}, {"a", "b"}), "rank 2");
}

TEST(HandshakeVerdict, MissingRanksAreNamed) {
  const auto d = allreduce(DType::Float32, {4});
  Descriptor gone;
  gone.arrived = 0;
  const std::string v = check_table({d, gone, d, gone});
  EXPECT_TRUE(contains(v, "ranks 1,3 did not arrive within the timeout")) << v;
}

TEST(HandshakeVerdict, RanksThatRejectedTheirArgumentsAreNamed) {
  const auto d = allreduce(DType::Float32, {4});
  Descriptor bad = d;
  bad.failed = 1;
  const std::string v = check_table({d, d, bad});
  EXPECT_TRUE(contains(v, "rank 2 rejected its arguments")) << v;
}

TEST(HandshakeVerdict, BarrierAgainstAllreduceIsAMismatch) {
  Descriptor barrier;
  barrier.seq = 7;
  barrier.collective = static_cast<int>(Collective::Barrier);
  const std::string v = check_table({barrier, allreduce(DType::Float32, {4})});
  EXPECT_TRUE(contains(v, "rank 0 called barrier")) << v;
}

TEST(ResponseCacheFingerprint, SameCollectiveSameFingerprintWhateverTheSequence) {
  Descriptor a = allreduce(DType::Float32, {1000});
  Descriptor b = a;
  b.seq = 12345;
  EXPECT_EQ(fingerprint(a), fingerprint(b));
  EXPECT_NE(fingerprint(a), 0u);
}

TEST(ResponseCacheFingerprint, EveryFieldTheVerdictComparesChangesIt) {
  const Descriptor base = allreduce(DType::Float32, {4, 8});
  std::vector<Descriptor> variants(6, base);
  variants[0] = allreduce(DType::Float64, {4, 8});
  variants[1] = allreduce(DType::Float32, {4, 8}, ReduceOp::Max);
  variants[2] = allreduce(DType::Float32, {8, 4});
  variants[3] = allreduce(DType::Float32, {32});
  variants[4].collective = static_cast<int>(Collective::Broadcast);
  variants[4].op = -1;
  variants[4].root = 0;
  variants[5] = variants[4];
  variants[5].root = 1;
  for (std::size_t i = 0; i < variants.size(); ++i) {
    EXPECT_NE(fingerprint(variants[i]), fingerprint(base)) << describe(variants[i]);
    for (std::size_t j = 0; j < i; ++j) {
      EXPECT_NE(fingerprint(variants[i]), fingerprint(variants[j]))
          << describe(variants[i]) << " vs " << describe(variants[j]);
    }
  }
}

}  // namespace
