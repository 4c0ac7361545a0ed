// What deterministic mode sets for CUDA before CUDA starts: a fixed cuBLAS
// workspace (CUBLAS_WORKSPACE_CONFIG) and no TF32. Checked on the CPU: the
// settings are process-wide flags and an environment variable. Its own
// suite, hence its own process (tnt_gtest_suites).
#include <gtest/gtest.h>

#include <cstdlib>
#include <stdexcept>
#include <string>

#include <ATen/Context.h>

#include <tarantella/base/error.h>
#include <tarantella/runtime/seed.h>

#include "train/step/deterministic_step.h"

namespace {

TEST(DeterministicCudaEnv, SetsTheCublasWorkspaceAndTurnsTf32Off) {
  ::unsetenv("CUBLAS_WORKSPACE_CONFIG");
  at::globalContext().setAllowTF32CuBLAS(true);
  at::globalContext().setAllowTF32CuDNN(true);
  tnt::set_seed(7, /*deterministic=*/true);
  ASSERT_NE(std::getenv("CUBLAS_WORKSPACE_CONFIG"), nullptr);
  EXPECT_EQ(std::string(std::getenv("CUBLAS_WORKSPACE_CONFIG")), ":4096:8");
  EXPECT_FALSE(at::globalContext().allowTF32CuBLAS());
  EXPECT_FALSE(at::globalContext().allowTF32CuDNN());
  EXPECT_TRUE(at::globalContext().deterministicAlgorithms());
}

// Deterministic training (CompileOptions::deterministic) calls this alone,
// without set_seed: cuDNN's choice of algorithm must be fixed too.
TEST(DeterministicCudaEnv, DeterministicTrainingAloneFixesCudnnsAlgorithms) {
  ::unsetenv("CUBLAS_WORKSPACE_CONFIG");
  at::globalContext().setDeterministicCuDNN(false);
  at::globalContext().setBenchmarkCuDNN(true);
  tnt::use_deterministic_cuda();
  EXPECT_TRUE(at::globalContext().deterministicCuDNN());
  EXPECT_FALSE(at::globalContext().benchmarkCuDNN());
  ::unsetenv("CUBLAS_WORKSPACE_CONFIG");
}

TEST(DeterministicCudaEnv, KeepsAValidUserValueAndRefusesAnInvalidOne) {
  ::setenv("CUBLAS_WORKSPACE_CONFIG", ":16:8", 1);
  tnt::set_seed(7, /*deterministic=*/true);
  EXPECT_EQ(std::string(std::getenv("CUBLAS_WORKSPACE_CONFIG")), ":16:8");
  ::setenv("CUBLAS_WORKSPACE_CONFIG", ":0:0", 1);
  try {
    tnt::set_seed(7, /*deterministic=*/true);
    FAIL() << "an invalid CUBLAS_WORKSPACE_CONFIG was accepted";
  } catch (const tnt::Error& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("CUBLAS_WORKSPACE_CONFIG=:4096:8 or :16:8"), std::string::npos) << message;
    EXPECT_NE(message.find("':0:0'"), std::string::npos) << message;
  }
  ::unsetenv("CUBLAS_WORKSPACE_CONFIG");
}

TEST(DeterministicCudaEnv, NotDeterministicLeavesTheEnvironmentAlone) {
  ::unsetenv("CUBLAS_WORKSPACE_CONFIG");
  tnt::set_seed(7, /*deterministic=*/false);
  EXPECT_EQ(std::getenv("CUBLAS_WORKSPACE_CONFIG"), nullptr);
}

// Deterministic mode's fit and evaluation on a GPU switch LibTorch to its
// deterministic algorithms (atomics-based CUDA kernels give sums that change
// from run to run) and restore them after; on the CPU nothing changes. The
// flag is process-wide, so a CUDA device object is enough to check it here.
TEST(DeterministicKernels, OnAGpuForTheScopesLifeOnly) {
  at::Context& context = at::globalContext();
  context.setDeterministicAlgorithms(false, false);
  {
    tnt::train::DeterministicKernelsScope cpu(c10::Device(c10::kCPU));
    EXPECT_FALSE(context.deterministicAlgorithms());
  }
  context.setAllowTF32CuDNN(true);
  context.setBenchmarkCuDNN(true);
  {
    tnt::train::DeterministicKernelsScope gpu(c10::Device(c10::kCUDA, 0));
    EXPECT_TRUE(context.deterministicAlgorithms());
    EXPECT_FALSE(context.deterministicAlgorithmsWarnOnly());
    // The CUDA settings too, from the scope's start (an evaluate before any
    // deterministic step): no TF32, no cuDNN benchmarking.
    EXPECT_FALSE(context.allowTF32CuDNN());
    EXPECT_FALSE(context.benchmarkCuDNN());
    {
      // Another rank's (in-process) or an evaluation inside the fit.
      tnt::train::DeterministicKernelsScope nested(c10::Device(c10::kCUDA, 1));
      EXPECT_TRUE(context.deterministicAlgorithms());
    }
    EXPECT_TRUE(context.deterministicAlgorithms()) << "the outer scope still lives";
  }
  EXPECT_FALSE(context.deterministicAlgorithms());
  ::unsetenv("CUBLAS_WORKSPACE_CONFIG");
}

TEST(DeterministicKernels, AUsersOwnSettingIsKept) {
  at::Context& context = at::globalContext();
  context.setDeterministicAlgorithms(true, /*warn_only=*/true);  // the user's
  {
    tnt::train::DeterministicKernelsScope gpu(c10::Device(c10::kCUDA, 0));
    EXPECT_TRUE(context.deterministicAlgorithms());
  }
  EXPECT_TRUE(context.deterministicAlgorithms());
  EXPECT_TRUE(context.deterministicAlgorithmsWarnOnly());
  context.setDeterministicAlgorithms(false, false);
}

// The tnt::Error that explain_missing_deterministic_kernel throws for `e`
// ("" if it throws none).
std::string explained(const std::exception& e) {
  try {
    tnt::train::explain_missing_deterministic_kernel(e);
  } catch (const tnt::Error& error) {
    return error.what();
  }
  return "";
}

TEST(DeterministicKernels, ARefusedOperationNamesDeterministicMode) {
  const std::string what = explained(c10::Error(
      c10::SourceLocation{"f", "f.cpp", 1},
      "upsample_bilinear2d_backward_out_cuda does not have a deterministic implementation, but "
      "you set 'torch.use_deterministic_algorithms(True)'. You can turn off determinism just for "
      "this operation"));
  EXPECT_NE(what.find("deterministic mode"), std::string::npos) << what;
  EXPECT_NE(what.find("upsample_bilinear2d_backward_out_cuda does not have a deterministic"),
            std::string::npos)
      << what;
  EXPECT_EQ(what.find("use_deterministic_algorithms"), std::string::npos)
      << "the user did not call it: " << what;
  EXPECT_NE(what.find("compile without deterministic mode"), std::string::npos) << what;
  // A Python module's or loss's refusal arrives as its Python error's text.
  const std::string python = explained(std::runtime_error(
      "RuntimeError: nll_loss2d_forward_out_cuda_template does not have a deterministic "
      "implementation, but you set 'torch.use_deterministic_algorithms(True)'."));
  EXPECT_NE(python.find("nll_loss2d_forward_out_cuda_template does not have"), std::string::npos)
      << python;
  EXPECT_EQ(python.find("use_deterministic_algorithms"), std::string::npos) << python;
  // Any other error is the caller's to rethrow.
  EXPECT_EQ(explained(c10::Error(c10::SourceLocation{"f", "f.cpp", 1},
                                 "mat1 and mat2 shapes cannot be")),
            "");
}

}  // namespace
