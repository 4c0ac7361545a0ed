#include <tarantella/runtime/seed.h>

#include <atomic>
#include <cstdlib>
#include <string>

#include <ATen/Context.h>
#include <torch/torch.h>

#include <tarantella/base/default_seed.h>
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
    at::globalContext().setDeterministicAlgorithms(true, /*warn_only=*/false);
    at::globalContext().setDeterministicCuDNN(true);
    at::globalContext().setBenchmarkCuDNN(false);
  }
  g_seed_set.store(true);
  log::debug("set_seed(" + std::to_string(seed) + "): generators seeded" +
             (deterministic ? ", deterministic algorithms on" : ""));
}

bool seed_was_set() { return g_seed_set.load(); }

}  // namespace tnt
