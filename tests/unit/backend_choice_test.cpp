// The choice between the MPI and the NCCL backend, and what the NCCL
// backend asks of NCCL: pure functions, tested on every build (no GPU, no
// NCCL needed). The NCCL backend itself runs only on a GPU machine
// (scripts/device-check.sh).
#include <gtest/gtest.h>

#include <optional>
#include <string>

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

// A host where NCCL can work: CUDA model, NCCL built, 2 ranks, 2 GPUs.
BackendFacts gpu_host(CommBackend requested = CommBackend::Auto) {
  BackendFacts f;
  f.requested = requested;
  f.model_on_cuda = true;
  f.nccl_built = true;
  f.local_ranks = 2;
  f.visible_gpus = 2;
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
  expect_contains(c.reason, "each of the 2 ranks on this host has a GPU of its own");
}

TEST(BackendChoice, AutomaticFallsBackToMpiAndSaysWhy) {
  BackendFacts no_build = gpu_host();
  no_build.nccl_built = false;
  BackendFacts cpu = gpu_host();
  cpu.model_on_cuda = false;
  BackendFacts shared = gpu_host();
  shared.visible_gpus = 1;
  const BackendChoice a = tnt::comm::choose_backend(no_build);
  const BackendChoice b = tnt::comm::choose_backend(cpu);
  const BackendChoice c = tnt::comm::choose_backend(shared);
  EXPECT_EQ(a.kind, BackendKind::Mpi);
  EXPECT_EQ(b.kind, BackendKind::Mpi);
  EXPECT_EQ(c.kind, BackendKind::Mpi);
  expect_contains(a.reason, "no NCCL backend");
  expect_contains(b.reason, "trains on the CPU");
  expect_contains(c.reason, "2 ranks on this host share 1 GPU");
}

TEST(BackendChoice, MpiForcedIsAlwaysMpi) {
  EXPECT_EQ(tnt::comm::choose_backend(gpu_host(CommBackend::Mpi)).kind, BackendKind::Mpi);
  BackendFacts nothing;  // CPU, no NCCL
  nothing.requested = CommBackend::Mpi;
  EXPECT_EQ(tnt::comm::choose_backend(nothing).kind, BackendKind::Mpi);
}

TEST(BackendChoice, NcclForcedWhereItWorks) {
  EXPECT_EQ(tnt::comm::choose_backend(gpu_host(CommBackend::Nccl)).kind, BackendKind::Nccl);
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

TEST(BackendChoice, NcclForcedOnASharedGpuNamesTheCountsAndTheFix) {
  BackendFacts f = gpu_host(CommBackend::Nccl);
  f.local_ranks = 2;
  f.visible_gpus = 1;
  const std::string e = choice_error(f);
  expect_contains(e, "2 ranks on this host share 1 GPU, and NCCL needs one GPU per rank");
  expect_contains(e, "start at most 1 rank per host");
  expect_contains(e, "--ranks-per-gpu and TNT_COMM_BACKEND=mpi");
  f.local_ranks = 3;
  f.visible_gpus = 2;
  expect_contains(choice_error(f), "3 ranks on this host share 2 GPUs");
  expect_contains(choice_error(f), "start at most 2 ranks per host");
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
    expect_contains(e.what(), "TNT_COMM_BACKEND=nccl cannot work on rank 1 (see the error there)");
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
