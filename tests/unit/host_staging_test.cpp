// The staged path's bookkeeping (comm/mpi/host_staging.h): the reused host
// buffers, and that CPU tensors pass through untouched. The device copies
// themselves (pinned memory, the side stream) run only on a GPU machine
// (scripts/device-check.sh: 2 ranks sharing one GPU).
#include "comm/mpi/host_staging.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <vector>

namespace {

using tnt::comm::HostStaging;
using tnt::comm::StagingBuffers;

// An ordinary allocator that records what it was asked for.
struct RecordingAllocator {
  std::vector<std::int64_t> requests;
  StagingBuffers::Allocate get() {
    return [this](std::int64_t numel, torch::ScalarType dtype) {
      requests.push_back(numel);
      return torch::empty({numel}, torch::TensorOptions().dtype(dtype));
    };
  }
};

TEST(StagingBuffers, ReusesOneBufferPerDtype) {
  RecordingAllocator alloc;
  StagingBuffers buffers(alloc.get());
  const auto a = buffers.view({4, 8}, torch::kFloat);
  EXPECT_EQ(a.sizes(), (std::vector<std::int64_t>{4, 8}));
  EXPECT_TRUE(a.is_contiguous());
  const auto b = buffers.view({16}, torch::kFloat);  // smaller: same memory
  EXPECT_EQ(b.data_ptr(), a.data_ptr());
  EXPECT_EQ(buffers.allocations(), 1);
  const auto c = buffers.view({16}, torch::kLong);  // another dtype: its own
  EXPECT_NE(c.data_ptr(), a.data_ptr());
  EXPECT_EQ(c.scalar_type(), torch::kLong);
  EXPECT_EQ(buffers.allocations(), 2);
  EXPECT_EQ(alloc.requests, (std::vector<std::int64_t>{32, 16}));
}

TEST(StagingBuffers, GrowsGeometricallyAndNeverShrinks) {
  RecordingAllocator alloc;
  StagingBuffers buffers(alloc.get());
  buffers.view({100}, torch::kFloat);
  buffers.view({101}, torch::kFloat);  // 1.5 x 100, not 101: fewer re-pins
  EXPECT_EQ(buffers.capacity(torch::kFloat), 150);
  buffers.view({1000}, torch::kFloat);  // beyond 1.5 x: the request
  EXPECT_EQ(buffers.capacity(torch::kFloat), 1000);
  buffers.view({10}, torch::kFloat);
  EXPECT_EQ(buffers.capacity(torch::kFloat), 1000);
  EXPECT_EQ(alloc.requests, (std::vector<std::int64_t>{100, 150, 1000}));
  EXPECT_EQ(buffers.capacity(torch::kDouble), 0);
}

TEST(StagingBuffers, ScalarsAndEmptyTensorsHaveViewsToo) {
  RecordingAllocator alloc;
  StagingBuffers buffers(alloc.get());
  EXPECT_EQ(buffers.view({}, torch::kFloat).dim(), 0);
  EXPECT_EQ(buffers.view({0, 3}, torch::kFloat).numel(), 0);
}

TEST(StagingBuffers, AnAllocatorThatReturnsTooLittleIsNamed) {
  StagingBuffers buffers([](std::int64_t, torch::ScalarType dtype) {
    return torch::empty({2}, torch::TensorOptions().dtype(dtype));
  });
  try {
    buffers.view({8}, torch::kFloat);
    FAIL() << "a 2-element buffer was accepted for 8 elements";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("no 1-D host tensor of 8 elements"), std::string::npos)
        << e.what();
  }
}

// CPU tensors are the transport's own memory: no copy, no buffer.
TEST(HostStaging, CpuTensorsPassThrough) {
  RecordingAllocator alloc;
  HostStaging staging(5.0, alloc.get());
  torch::Tensor t = torch::arange(6, torch::kFloat);
  torch::Tensor host = staging.to_host(t);
  EXPECT_TRUE(host.is_same(t));
  host.mul_(2);
  staging.to_device(t, host);
  EXPECT_TRUE(t.equal(torch::arange(6, torch::kFloat) * 2));
  EXPECT_EQ(staging.staged(), 0);
  EXPECT_TRUE(alloc.requests.empty());
}

TEST(HostStaging, ACpuTargetReceivesAnotherHostTensor) {
  HostStaging staging(5.0);
  torch::Tensor t = torch::zeros({3});
  staging.to_device(t, torch::ones({3}));
  EXPECT_TRUE(t.equal(torch::ones({3})));
}

// A result of another shape (allgather, reduce_scatter) for a CPU tensor:
// a new tensor of the caller's dtype, never a reused buffer (the caller
// keeps it), returned as it is.
TEST(HostStaging, CpuResultsAreNewTensorsReturnedAsTheyAre) {
  RecordingAllocator alloc;
  HostStaging staging(5.0, alloc.get());
  const torch::Tensor like = torch::arange(4, torch::kDouble);
  torch::Tensor a = staging.result_buffer({2, 4}, like);
  torch::Tensor b = staging.result_buffer({2, 4}, like);
  EXPECT_EQ(a.sizes(), (std::vector<std::int64_t>{2, 4}));
  EXPECT_EQ(a.scalar_type(), torch::kDouble);
  EXPECT_TRUE(a.device().is_cpu());
  EXPECT_NE(a.data_ptr(), b.data_ptr());
  EXPECT_TRUE(staging.result_to_device(a, like.device()).is_same(a));
  EXPECT_TRUE(alloc.requests.empty());
}

}  // namespace
