// The choice between the MPI and the NCCL backend, and what the NCCL
// backend asks of NCCL: pure functions, tested on every build (no GPU, no
// NCCL needed). The NCCL backend itself runs only on a GPU machine
// (scripts/device-check.sh).
#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <tarantella/base/config.h>
#include <tarantella/base/error.h>

#include "comm/world/backend_choice.h"
#include "comm/nccl/nccl_factory.h"
#include "comm/nccl/nccl_plan.h"

namespace {

using tnt::CommBackend;
using tnt::comm::BackendChoice;
using tnt::comm::BackendFacts;
using tnt::comm::BackendKind;
using tnt::comm::BackendVote;
using tnt::comm::DType;
using tnt::comm::NcclOp;
using tnt::comm::NcclType;
using tnt::comm::ReduceOp;

// A rank where NCCL can work: CUDA model, NCCL built, a GPU of its own.
BackendFacts gpu_host(CommBackend requested = CommBackend::Auto) {
  BackendFacts f;
  f.requested = requested;
  f.model_on_cuda = true;
  f.nccl_built = true;
  f.gpu = "0000:3b:00.0";
  return f;
}

std::string choice_error(const BackendFacts& f) {
  try {
    tnt::comm::choose_backend(f);
  } catch (const tnt::Error& e) {
    return e.what();
  }
  return "(no error)";
}

void expect_contains(const std::string& text, const std::string& part) {
  EXPECT_NE(text.find(part), std::string::npos) << "expected \"" << part << "\" in: " << text;
}

TEST(BackendChoice, AutomaticPicksNcclWhenEveryRankHasItsOwnGpu) {
  const BackendChoice c = tnt::comm::choose_backend(gpu_host());
  EXPECT_EQ(c.kind, BackendKind::Nccl);
  expect_contains(c.reason, "no other rank uses this rank's GPU (0000:3b:00.0)");
}

TEST(BackendChoice, AutomaticFallsBackToMpiAndSaysWhy) {
  BackendFacts no_build = gpu_host();
  no_build.nccl_built = false;
  BackendFacts cpu = gpu_host();
  cpu.model_on_cuda = false;
  BackendFacts shared = gpu_host();
  shared.sharing_gpu = {1};
  const BackendChoice a = tnt::comm::choose_backend(no_build);
  const BackendChoice b = tnt::comm::choose_backend(cpu);
  const BackendChoice c = tnt::comm::choose_backend(shared);
  EXPECT_EQ(a.kind, BackendKind::Mpi);
  EXPECT_EQ(b.kind, BackendKind::Mpi);
  EXPECT_EQ(c.kind, BackendKind::Mpi);
  expect_contains(a.reason, "no NCCL backend");
  expect_contains(b.reason, "trains on the CPU");
  expect_contains(c.reason, "this rank's GPU (0000:3b:00.0) is also used by rank 1");
}

// A library older than the backend needs (loaded at run time, whatever the
// headers were): MPI with the reason, or, forced, an error with the fix.
TEST(BackendChoice, AnNcclTooOldFallsBackToMpiOrNamesTheFix) {
  BackendFacts old = gpu_host();
  old.nccl_version = 22605;
  const BackendChoice c = tnt::comm::choose_backend(old);
  EXPECT_EQ(c.kind, BackendKind::Mpi);
  expect_contains(c.reason, "the NCCL loaded is version 2.26.5, and the NCCL backend needs 2.27");
  old.requested = CommBackend::Nccl;
  const std::string e = choice_error(old);
  expect_contains(e, "TNT_COMM_BACKEND=nccl, but the NCCL loaded is version 2.26.5");
  expect_contains(e, "install a newer NCCL");
  old.nccl_version = 22809;
  EXPECT_EQ(tnt::comm::choose_backend(old).kind, BackendKind::Nccl);
}

TEST(BackendChoice, MpiForcedIsAlwaysMpi) {
  EXPECT_EQ(tnt::comm::choose_backend(gpu_host(CommBackend::Mpi)).kind, BackendKind::Mpi);
  BackendFacts nothing;  // CPU, no NCCL
  nothing.requested = CommBackend::Mpi;
  EXPECT_EQ(tnt::comm::choose_backend(nothing).kind, BackendKind::Mpi);
}

TEST(BackendChoice, NcclForcedWhereItWorks) {
  const BackendChoice c = tnt::comm::choose_backend(gpu_host(CommBackend::Nccl));
  EXPECT_EQ(c.kind, BackendKind::Nccl);
  EXPECT_EQ(c.reason, "TNT_COMM_BACKEND=nccl (this rank's GPU: 0000:3b:00.0)");
}

TEST(BackendChoice, NcclForcedWithoutTheBackendNamesTheFix) {
  BackendFacts f = gpu_host(CommBackend::Nccl);
  f.nccl_built = false;
  const std::string e = choice_error(f);
  expect_contains(e, "TNT_COMM_BACKEND=nccl, but this build of Tarantella has no NCCL backend");
  expect_contains(e, "-DTNT_WITH_NCCL=ON");
  expect_contains(e, "TNT_COMM_BACKEND=mpi");
}

TEST(BackendChoice, NcclForcedOnTheCpuNamesTheFix) {
  BackendFacts f = gpu_host(CommBackend::Nccl);
  f.model_on_cuda = false;
  const std::string e = choice_error(f);
  expect_contains(e, "this rank trains on the CPU");
  expect_contains(e, "NCCL moves GPU memory only");
  expect_contains(e, "unset TNT_COMM_BACKEND or set it to mpi");
}

TEST(BackendChoice, NcclForcedOnASharedGpuNamesTheRanksAndTheFix) {
  BackendFacts f = gpu_host(CommBackend::Nccl);
  f.sharing_gpu = {2, 5};
  const std::string e = choice_error(f);
  expect_contains(e, "this rank's GPU (0000:3b:00.0) is also used by ranks 2,5, and NCCL needs "
                     "one GPU per rank");
  expect_contains(e, "start one rank per GPU");
  expect_contains(e, "--ranks-per-gpu and TNT_COMM_BACKEND=mpi");
}

// GPUs are told apart by host and bus id, as NCCL does, not by how many a
// rank sees: under Slurm's --gpus-per-task=1 every rank sees one GPU, index
// 0, each a different one.
TEST(BackendChoice, OneVisibleGpuPerRankIsNotSharing) {
  using tnt::comm::gpu_key;
  const std::vector<std::int64_t> keys = {
      gpu_key("node1/boot-a", "0000:07:00.0"), gpu_key("node1/boot-a", "0000:0b:00.0"),
      gpu_key("node2/boot-b", "0000:07:00.0"), gpu_key("node2/boot-b", "0000:0b:00.0")};
  for (int r = 0; r < 4; ++r) {
    EXPECT_TRUE(tnt::comm::ranks_sharing_gpu(keys, r).empty()) << "rank " << r;
  }
  EXPECT_EQ(tnt::comm::rank_gpu_index(1, 1), 0);  // its only GPU
  EXPECT_EQ(tnt::comm::rank_gpu_index(3, 2), 1);  // 2 visible, local rank 3
  EXPECT_EQ(tnt::comm::rank_gpu_index(3, 4), 3);
}

TEST(BackendChoice, SameHostSameBusIsSharing) {
  using tnt::comm::gpu_key;
  const std::int64_t gpu0 = gpu_key("node1/boot-a", "0000:07:00.0");
  const std::vector<std::int64_t> keys = {gpu0, gpu_key("node1/boot-a", "0000:0b:00.0"), gpu0, 0,
                                          0};
  EXPECT_EQ(tnt::comm::ranks_sharing_gpu(keys, 0), (std::vector<int>{2}));
  EXPECT_EQ(tnt::comm::ranks_sharing_gpu(keys, 2), (std::vector<int>{0}));
  EXPECT_TRUE(tnt::comm::ranks_sharing_gpu(keys, 1).empty());
  // Ranks without a GPU share nothing, not even "no GPU".
  EXPECT_TRUE(tnt::comm::ranks_sharing_gpu(keys, 3).empty());
  EXPECT_EQ(gpu_key("node1/boot-a", ""), 0);
  EXPECT_NE(gpu_key("node1/boot-a", "0000:07:00.0"), gpu_key("node1/boot-b", "0000:07:00.0"));
}

// Told by rank 0 for the whole job: every rank has every key, so the warning
// does not depend on rank 0 being among the ranks that share.
TEST(BackendChoice, AccidentalSharingWarnsForTheWholeJobAndIntendedSharingDoesNot) {
  using tnt::comm::sharing_warning;
  EXPECT_EQ(sharing_warning({7, 8, 9, 0, 0}, false), "");
  const std::string w = sharing_warning({5, 7, 9, 7, 9, 0, 0}, false);
  expect_contains(w, "ranks 1,3 share a GPU; ranks 2,4 share another: ");
  expect_contains(w, "through host memory over MPI instead of NCCL");
  expect_contains(w, "--ranks-per-gpu K");
  EXPECT_EQ(w.find("rank 0"), std::string::npos) << w;  // rank 0 has its own, and says so for all
  EXPECT_EQ(sharing_warning({5, 7, 9, 7, 9}, true), "");
  expect_contains(sharing_warning({1, 1, 2, 2, 3, 3, 4, 4, 6, 6}, false),
                  "ranks 6,7 share another; and 1 more shared GPU(s):");
}

TEST(BackendChoice, ConfigReadsTntRanksPerGpu) {
  auto resolve = [](const char* value) {
    return tnt::Config::from_lookup([value](const std::string& name) -> std::optional<std::string> {
      if (name == "TNT_RANKS_PER_GPU") return std::string(value);
      return std::nullopt;
    });
  };
  EXPECT_EQ(resolve("3").ranks_per_gpu, 3);
  EXPECT_EQ(tnt::Config::from_lookup([](const std::string&) { return std::nullopt; }).ranks_per_gpu,
            1);
  try {
    resolve("0");
    FAIL() << "expected an error";
  } catch (const tnt::Error& e) {
    expect_contains(e.what(), "TNT_RANKS_PER_GPU='0'");
  }
}

TEST(BackendChoice, SettleNeedsEveryRankForNccl) {
  const BackendChoice nccl{BackendKind::Nccl, "mine"};
  const BackendChoice mpi{BackendKind::Mpi, "my reason"};
  EXPECT_EQ(tnt::comm::settle_backend({BackendVote::Nccl, BackendVote::Nccl}, nccl).kind,
            BackendKind::Nccl);
  const BackendChoice mixed =
      tnt::comm::settle_backend({BackendVote::Nccl, BackendVote::Mpi, BackendVote::Mpi}, nccl);
  EXPECT_EQ(mixed.kind, BackendKind::Mpi);
  expect_contains(mixed.reason, "ranks 1,2 cannot use NCCL");
  const BackendChoice own = tnt::comm::settle_backend({BackendVote::Mpi, BackendVote::Nccl}, mpi);
  EXPECT_EQ(own.kind, BackendKind::Mpi);
  EXPECT_EQ(own.reason, "my reason");
}

TEST(BackendChoice, SettleNamesTheRanksThatFailed) {
  try {
    tnt::comm::settle_backend({BackendVote::Nccl, BackendVote::Failed}, {BackendKind::Nccl, ""});
    FAIL() << "expected an error";
  } catch (const tnt::Error& e) {
    expect_contains(e.what(), "the transport of collectives (TNT_COMM_BACKEND) could not be "
                              "chosen: rank 1 failed (see the error there): fix that, or use "
                              "TNT_COMM_BACKEND=mpi");
  }
}

TEST(BackendChoice, ConfigReadsTntCommBackend) {
  auto resolve = [](const char* value) {
    return tnt::Config::from_lookup([value](const std::string& name) -> std::optional<std::string> {
      if (name == "TNT_COMM_BACKEND") return std::string(value);
      return std::nullopt;
    });
  };
  EXPECT_EQ(tnt::Config::from_lookup([](const std::string&) { return std::nullopt; }).comm_backend,
            CommBackend::Auto);
  EXPECT_EQ(resolve("auto").comm_backend, CommBackend::Auto);
  EXPECT_EQ(resolve("").comm_backend, CommBackend::Auto);
  EXPECT_EQ(resolve(" MPI ").comm_backend, CommBackend::Mpi);
  EXPECT_EQ(resolve("nccl").comm_backend, CommBackend::Nccl);
  try {
    resolve("gloo");
    FAIL() << "expected an error";
  } catch (const tnt::Error& e) {
    expect_contains(e.what(), "TNT_COMM_BACKEND='gloo' is not a communication backend: use mpi or "
                              "nccl");
  }
}

TEST(NcclPlan, MapsEveryDtype) {
  EXPECT_EQ(tnt::comm::nccl_plan(DType::Float32, std::nullopt).type, NcclType::Float32);
  EXPECT_EQ(tnt::comm::nccl_plan(DType::Float64, std::nullopt).type, NcclType::Float64);
  EXPECT_EQ(tnt::comm::nccl_plan(DType::Float16, std::nullopt).type, NcclType::Float16);
  EXPECT_EQ(tnt::comm::nccl_plan(DType::BFloat16, std::nullopt).type, NcclType::BFloat16);
  EXPECT_EQ(tnt::comm::nccl_plan(DType::Int32, std::nullopt).type, NcclType::Int32);
  EXPECT_EQ(tnt::comm::nccl_plan(DType::Int64, std::nullopt).type, NcclType::Int64);
  EXPECT_EQ(tnt::comm::nccl_plan(DType::UInt8, std::nullopt).type, NcclType::Uint8);
  EXPECT_EQ(tnt::comm::nccl_plan(DType::Bool, std::nullopt).type, NcclType::Uint8);
}

TEST(NcclPlan, MapsEveryReduceOp) {
  auto plan = [](ReduceOp op) { return tnt::comm::nccl_plan(DType::Float64, op); };
  EXPECT_EQ(plan(ReduceOp::Sum).op, NcclOp::Sum);
  EXPECT_EQ(plan(ReduceOp::Product).op, NcclOp::Prod);
  EXPECT_EQ(plan(ReduceOp::Min).op, NcclOp::Min);
  EXPECT_EQ(plan(ReduceOp::Max).op, NcclOp::Max);
  // Average: a sum, divided afterwards, as on MPI (the same rounding).
  EXPECT_EQ(plan(ReduceOp::Average).op, NcclOp::Sum);
  EXPECT_TRUE(plan(ReduceOp::Average).divide_by_size);
  EXPECT_FALSE(plan(ReduceOp::Sum).divide_by_size);
  // float64 stays float64: deterministic mode's exact integer sums.
  EXPECT_EQ(plan(ReduceOp::Sum).type, NcclType::Float64);
  EXPECT_STREQ(tnt::comm::to_string(plan(ReduceOp::Max).op), "ncclMax");
  EXPECT_STREQ(tnt::comm::to_string(plan(ReduceOp::Sum).type), "ncclFloat64");
}

TEST(NcclPlan, BoolIsLogicalOnBytesAndRefusesArithmetic) {
  EXPECT_EQ(tnt::comm::nccl_plan(DType::Bool, ReduceOp::Min).op, NcclOp::Min);  // and
  EXPECT_EQ(tnt::comm::nccl_plan(DType::Bool, ReduceOp::Max).op, NcclOp::Max);  // or
  EXPECT_THROW(tnt::comm::nccl_plan(DType::Bool, ReduceOp::Sum), tnt::Error);
  EXPECT_THROW(tnt::comm::nccl_plan(DType::Int64, ReduceOp::Average), tnt::Error);
}

TEST(NcclFactory, RefusesWhatItCannotBuildOn) {
  // Without NCCL: "not built", with the fix. With NCCL: the backend is
  // layered on an MPI backend, and refuses anything else before touching
  // CUDA (so this runs on machines without a GPU too).
  try {
    tnt::comm::make_nccl_backend(nullptr, 0);
    FAIL() << "expected an error";
  } catch (const tnt::Error& e) {
    expect_contains(e.what(), tnt::comm::nccl_built() ? "layered on an MPI backend"
                                                      : "no NCCL backend");
  }
}

}  // namespace
