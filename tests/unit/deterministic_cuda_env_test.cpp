// What deterministic mode sets for CUDA before CUDA starts: a fixed cuBLAS
// workspace (CUBLAS_WORKSPACE_CONFIG) and no TF32. Checked on the CPU: the
// settings are process-wide flags and an environment variable. Its own
// suite, hence its own process (tnt_gtest_suites).
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include <ATen/Context.h>

#include <tarantella/base/error.h>
#include <tarantella/runtime/seed.h>

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

}  // namespace
