// The NCCL backend on a GPU machine, at any rank count with one
// GPU per rank. Started by CTest as `tarantella -n 1 -x TNT_COMM_BACKEND=nccl
// -- nccl_backend_test` (scripts/device-check.sh), through gpu_or_skip.sh; on
// a cluster:
//
//   tarantella -n 8 -x TNT_COMM_BACKEND=nccl -x TNT_COMM_TIMEOUT=60 -- nccl_backend_test
//
// Inputs are small integers times powers of two (exact_values.h), so that
// every result is exact in every dtype at up to 64 ranks and is compared with
// equality. At 1 rank this proves the plumbing (communicator, streams,
// events, every collective, splits, the abort path, a fit on the rank's
// GPU), not NCCL's arithmetic. main() is tests/mpi/mpi_test_main.cpp (a
// failure on one rank ends the job). Without a GPU device on the machine
// gpu_or_skip.sh reports the test skipped; with one that LibTorch cannot use
// (the runtime refuses TNT_COMM_BACKEND=nccl: "this rank trains on the
// CPU"), it fails.
#include <gtest/gtest.h>

#include <cuda_runtime_api.h>

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <functional>
#include <set>
#include <string>
#include <thread>
#include <utility>

#include <ATen/cuda/Sleep.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/torch.h>

#include <tarantella/tarantella.h>

#include "exact_values.h"

namespace {

using tnt::comm::ReduceOp;

// This rank's GPU, by the runtime's rule (comm/world/backend_choice.h,
// rank_gpu_index): the local rank modulo the GPUs this process sees (one,
// device 0, where a scheduler binds a GPU to each rank).
torch::Device gpu() {
  return torch::Device(torch::kCUDA,
                       static_cast<c10::DeviceIndex>(tnt::world().local_rank() %
                                                     static_cast<int>(torch::cuda::device_count())));
}

using tnt_test::Combine;
using tnt_test::exact_input;
using tnt_test::exact_result;

// Rank `rank`'s input in `dtype` on this rank's GPU (exact_values.h).
torch::Tensor ramp(std::int64_t count, int rank, torch::ScalarType dtype) {
  return exact_input(count, rank, dtype).to(dtype).to(gpu());
}

TEST(NcclBackend, TheWorldIsAnNcclGroup) {
  EXPECT_NE(tnt::world().describe().find("over nccl"), std::string::npos)
      << tnt::world().describe();
}

// The device each rank used: its own GPU (no two ranks on the same one, by
// host and PCI bus id, as NCCL tells them apart: "Duplicate GPU detected"),
// and a model built here trains there and stays there.
TEST(NcclBackend, EachRankTrainsOnAGpuOfItsOwn) {
  ASSERT_TRUE(torch::cuda::is_available()) << "LibTorch sees no GPU on rank " << tnt::get_rank();
  cudaDeviceProp properties{};
  ASSERT_EQ(cudaGetDeviceProperties(&properties, gpu().index()), cudaSuccess);
  char bus[32] = {};
  ASSERT_EQ(cudaDeviceGetPCIBusId(bus, sizeof(bus), gpu().index()), cudaSuccess);
  char host[256] = {};
  ::gethostname(host, sizeof(host) - 1);
  std::printf("rank %d of %d on host %s: %s (%s, PCI %s)\n", tnt::get_rank(), tnt::get_size(),
              host, gpu().str().c_str(), properties.name, bus);
  const auto key = static_cast<std::int64_t>(
      std::hash<std::string>{}(std::string(host) + "/" + bus));
  const torch::Tensor keys =
      tnt::world().allgather(torch::tensor({key}, torch::kInt64)).contiguous();
  const std::set<std::int64_t> distinct(keys.data_ptr<std::int64_t>(),
                                        keys.data_ptr<std::int64_t>() + keys.numel());
  EXPECT_EQ(static_cast<int>(distinct.size()), tnt::get_size())
      << "two ranks use the same GPU (host and PCI bus id)";

  torch::manual_seed(1);
  tnt::Model model(torch::nn::Linear(4, 2));
  EXPECT_EQ(model.device(), gpu());
  model.compile(tnt::CompileOptions()
                    .optimizer(tnt::optimizers::SGD(0.1))
                    .loss(tnt::losses::MeanSquaredError()));
  const torch::Tensor x = torch::randn({32, 4}, at::detail::createCPUGenerator(2));
  const auto history = model.fit(
      tnt::data::Dataset::from_tensor_slices({x, x.narrow(1, 0, 2) * 2}).batch(8),
      tnt::FitOptions().epochs(2).verbose(0));
  EXPECT_LT(history.history.at("loss").back(), history.history.at("loss").front());
  for (const auto& [name, p] : model.named_parameters()) {
    EXPECT_EQ(p.device(), gpu()) << name;
  }

  // No (host, index) uniqueness check: under Slurm's --gpus-per-task every
  // rank sees its own GPU as cuda:0. The bus ids above tell GPUs apart.
}

TEST(NcclBackend, AllreduceEveryDtypeAndOpExactly) {
  const int n = tnt::get_size();
  const int r = tnt::get_rank();
  const std::int64_t count = 1000;
  for (auto dtype : {torch::kFloat32, torch::kFloat64, torch::kFloat16, torch::kBFloat16,
                     torch::kInt32, torch::kInt64, torch::kUInt8}) {
    SCOPED_TRACE(c10::toString(dtype));
    for (const auto& [op, how] : {std::pair{ReduceOp::Sum, Combine::Sum},
                                  std::pair{ReduceOp::Max, Combine::Max},
                                  std::pair{ReduceOp::Min, Combine::Min}}) {
      torch::Tensor t = ramp(count, r, dtype);
      tnt::world().allreduce(t, op);
      ASSERT_EQ(t.device(), gpu());
      ASSERT_EQ(t.scalar_type(), dtype);
      EXPECT_TRUE(torch::equal(t.cpu(), exact_result(count, n, dtype, how)))
          << "op " << static_cast<int>(how) << " at " << n << " ranks";
    }
  }
  // Average is the exact sum divided by the group's size on the device, as
  // the backend does it (nccl_plan.h): the same division here.
  torch::Tensor avg = ramp(count, r, torch::kFloat64);
  tnt::world().allreduce(avg, ReduceOp::Average);
  torch::Tensor want = exact_result(count, n, torch::kFloat64, Combine::Sum).to(gpu());
  if (n > 1) want.div_(n);
  EXPECT_TRUE(torch::equal(avg, want));
  torch::Tensor flags = torch::tensor({r == 0, true, false}, torch::kBool).to(gpu());
  torch::Tensor any = flags.clone();
  tnt::world().allreduce(flags, ReduceOp::Min);
  tnt::world().allreduce(any, ReduceOp::Max);
  EXPECT_TRUE(torch::equal(flags.cpu(), torch::tensor({n == 1, true, false})));
  EXPECT_TRUE(torch::equal(any.cpu(), torch::tensor({true, true, false})));
}

TEST(NcclBackend, Float64SumsOfLargeIntegersAreExact) {
  // Deterministic mode's chunk sums: integers in float64 below 2^53.
  const double big = 4503599627370496.0;  // 2^52
  torch::Tensor t = torch::full({4096}, big / 64 + tnt::get_rank(), torch::kFloat64).to(gpu());
  tnt::world().allreduce(t);
  const int n = tnt::get_size();
  const double want = n * (big / 64) + n * (n - 1) / 2.0;
  EXPECT_TRUE(torch::equal(t.cpu(), torch::full({4096}, want, torch::kFloat64)));
}

TEST(NcclBackend, BroadcastAllgatherAllgathervReduceScatter) {
  const int n = tnt::get_size();
  const int r = tnt::get_rank();
  torch::Tensor b = ramp(100, r, torch::kFloat32);
  tnt::world().broadcast(b, n - 1);
  EXPECT_TRUE(torch::equal(b.cpu(), exact_input(100, n - 1, torch::kFloat32).to(torch::kFloat32)));

  const torch::Tensor g = tnt::world().allgather(torch::full({2, 3}, r, torch::kInt64).to(gpu()));
  ASSERT_EQ(g.size(0), 2 * n);
  for (int q = 0; q < n; ++q) EXPECT_EQ(g[2 * q][0].item<std::int64_t>(), q);

  // Rank r has r + 1 rows: blocks of unequal size (grouped broadcasts).
  const torch::Tensor v = tnt::world().allgatherv(torch::full({r + 1, 2}, r, torch::kInt32).to(gpu()));
  ASSERT_EQ(v.size(0), n * (n + 1) / 2);
  EXPECT_EQ(v[v.size(0) - 1][1].item<std::int32_t>(), n - 1);

  // 2n + 1 rows: the first rank gets one row more (grouped reduces), then
  // 2n rows (ncclReduceScatter).
  for (std::int64_t rows : {2 * n + 1, 2 * n}) {
    const torch::Tensor in = torch::arange(rows * 3, torch::kFloat32).reshape({rows, 3}).to(gpu());
    const torch::Tensor out = tnt::world().reduce_scatter(in);
    const std::int64_t first = (rows / n) * r + std::min<std::int64_t>(r, rows % n);
    const std::int64_t mine = rows / n + (r < rows % n ? 1 : 0);
    ASSERT_EQ(out.size(0), mine);
    EXPECT_TRUE(torch::equal(out.cpu(), in.cpu().narrow(0, first, mine) * n));
  }
}

// An asynchronous collective enqueued from a side stream (as a backward hook
// runs on autograd's stream) waits for the kernels queued on that stream
// before it (its ready mark), and its result is ordered before that stream's
// next use. A long kernel, then a fill on the side stream, then the call: at
// 1 rank NCCL copies the allgather's input into its result, and that copy
// must read the filled values. An average is divided before the handle is
// done (on the NCCL stream), so the side stream reads the mean.
TEST(NcclBackend, AsyncCallsFromASideStreamWaitForTheirTensorThere) {
  const int n = tnt::get_size();
  const c10::cuda::CUDAGuard on_gpu(gpu().index());
  const c10::cuda::CUDAStream side = c10::cuda::getStreamFromPool(false, gpu().index());
  const c10::cuda::CUDAStreamGuard on_side(side);
  const std::int64_t count = 1 << 20;
  torch::Tensor x = torch::zeros({count}, torch::TensorOptions().device(gpu()));
  at::cuda::sleep(200'000'000);  // about 0.1 s of the side stream
  x.fill_(7);
  const torch::Tensor all = tnt::world().allgather_async(x).wait();
  EXPECT_TRUE(torch::equal(all.cpu(), torch::full({count * n}, 7.0f)))
      << "the allgather read its input before the side stream's fill";

  // The average, read from a third stream after wait(): the division must
  // be done by then, not queued behind the side stream's next kernel (at 1
  // rank nothing is divided: this part tells only at 2 ranks or more).
  torch::Tensor y = torch::zeros({1000}, torch::TensorOptions().device(gpu()));
  at::cuda::sleep(200'000'000);
  y.fill_(2.0f * n);
  tnt::comm::Handle h = tnt::world().allreduce_async(y, ReduceOp::Average);
  at::cuda::sleep(200'000'000);  // the side stream busy while the handle completes
  h.wait();
  const c10::cuda::CUDAStreamGuard on_third(c10::cuda::getStreamFromPool(false, gpu().index()));
  EXPECT_TRUE(torch::equal(y.cpu(), torch::full({1000}, 2.0f * n)))
      << "the average is not 2n once the handle is done: not yet divided by " << n;
}

TEST(NcclBackend, HostTensorsGoOverMpiOnTheSameGroup) {
  torch::Tensor t = torch::ones({10}, torch::kFloat64);
  tnt::world().allreduce(t);
  EXPECT_EQ(t[0].item<double>(), tnt::get_size());
  EXPECT_EQ(tnt::world().broadcast_string(tnt::get_rank() == 0 ? "hello" : ""), "hello");
}

TEST(NcclBackend, MismatchIsNamedByTheHandshake) {
  // Rank 0 passes 3 elements, the others 4 (at 1 rank: a wrong root).
  const int n = tnt::get_size();
  torch::Tensor t = torch::zeros({tnt::get_rank() == 0 ? 3 : 4}, torch::kFloat32).to(gpu());
  try {
    if (n == 1) {
      tnt::world().broadcast(t, 5);
    } else {
      tnt::world().allreduce(t);
    }
    FAIL() << "expected an error";
  } catch (const tnt::Error& e) {
    const std::string what = e.what();
    EXPECT_TRUE(what.find(n == 1 ? "broadcast root 5" : "mismatch") != std::string::npos) << what;
  }
}

TEST(NcclBackend, SplitGroupsHaveTheirOwnCommunicator) {
  const int r = tnt::get_rank();
  const tnt::comm::ProcessGroup half = tnt::world().split(r % 2);
  EXPECT_NE(half.describe().find("over nccl"), std::string::npos) << half.describe();
  torch::Tensor t = torch::ones({64}, torch::kFloat32).to(gpu());
  half.allreduce(t);
  EXPECT_EQ(t[0].item<float>(), static_cast<float>(half.size()));
}

TEST(NcclBackend, StuckCollectiveIsAbortedAndNamed) {
  // The caller's stream is held by a host function, so the NCCL stream
  // (which waits on the caller's stream) cannot run: after TNT_COMM_TIMEOUT
  // the collective must be aborted and reported. On a group of its own, so
  // that the world stays usable for the runtime's shutdown check. A helper
  // releases the stream 2 s after the timeout whatever happens, so that an
  // ncclCommAbort that waits for the device cannot deadlock the test.
  const tnt::comm::ProcessGroup own = tnt::world().split(0);
  const double timeout = tnt::config().comm_timeout_seconds;
  std::atomic<bool> release{false};
  std::thread releaser([&release, timeout] {
    std::this_thread::sleep_for(std::chrono::duration<double>(timeout + 2));
    release = true;
  });
  const c10::cuda::CUDAStream side = c10::cuda::getStreamFromPool(false, gpu().index());
  torch::Tensor t = torch::ones({16}, torch::kFloat32).to(gpu());
  torch::cuda::synchronize();
  std::string what = "(no error)";
  const auto t0 = std::chrono::steady_clock::now();
  {
    const c10::cuda::CUDAStreamGuard on_side(side);
    ASSERT_EQ(cudaLaunchHostFunc(
                  side.stream(),
                  [](void* flag) {
                    while (!static_cast<std::atomic<bool>*>(flag)->load()) {
                      std::this_thread::sleep_for(std::chrono::milliseconds(1));
                    }
                  },
                  &release),
              cudaSuccess);
    try {
      own.allreduce(t);  // the engine is idle: runs on this thread, after `side`
    } catch (const tnt::TimeoutError& e) {
      what = e.what();
    }
  }
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  releaser.join();
  side.synchronize();
  std::printf("stuck collective reported after %.1f s: %s\n", took, what.c_str());
  EXPECT_NE(what.find("did not complete within"), std::string::npos) << what;
  EXPECT_NE(what.find("NCCL communicator was aborted"), std::string::npos) << what;
  EXPECT_GE(took, timeout);
  EXPECT_TRUE(own.broken());
  EXPECT_FALSE(tnt::world().broken());
}

}  // namespace
