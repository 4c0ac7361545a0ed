#include <tarantella/runtime/seed.h>

#include <atomic>
#include <cstdlib>
#include <string>

#include <ATen/Context.h>
#include <torch/torch.h>

#include <tarantella/base/default_seed.h>
#include <tarantella/base/error.h>
#include <tarantella/base/logging.h>

namespace tnt {
namespace {
std::atomic<bool> g_seed_set{false};

}  // namespace

void set_seed(std::uint64_t seed, bool deterministic) {
  torch::manual_seed(seed);  // the CPU generator and, where present, CUDA's
  set_default_shuffle_seed(seed);
  std::srand(static_cast<unsigned>(seed));
  if (deterministic) {
    use_deterministic_cuda();
    at::globalContext().setDeterministicAlgorithms(true, /*warn_only=*/false);
  }
  g_seed_set.store(true);
  log::debug("set_seed(" + std::to_string(seed) + "): generators seeded" +
             (deterministic ? ", deterministic algorithms on" : ""));
}

void use_deterministic_cuda() {
  // cuBLAS is deterministic only with a fixed workspace configuration, which
  // it reads from the environment when CUDA makes its first cuBLAS handle.
  const char* value = std::getenv("CUBLAS_WORKSPACE_CONFIG");
  if (value == nullptr) {
    ::setenv("CUBLAS_WORKSPACE_CONFIG", ":4096:8", /*overwrite=*/0);
  } else if (std::string(value) != ":4096:8" && std::string(value) != ":16:8") {
    throw Error(std::string("deterministic mode needs CUBLAS_WORKSPACE_CONFIG=:4096:8 or :16:8 "
                            "for reproducible cuBLAS results, but it is '") +
                value + "': unset it (Tarantella then sets :4096:8) or set one of those values");
  }
  // TF32 rounds float32 matmuls and convolutions on Ampere and newer GPUs
  // differently from the CPU; deterministic results are compared bitwise.
  at::globalContext().setAllowTF32CuBLAS(false);
  at::globalContext().setAllowTF32CuDNN(false);
  // cuDNN's deterministic algorithms, and no benchmarking (which may pick a
  // different algorithm from run to run).
  at::globalContext().setDeterministicCuDNN(true);
  at::globalContext().setBenchmarkCuDNN(false);
}

bool seed_was_set() { return g_seed_set.load(); }

}  // namespace tnt
