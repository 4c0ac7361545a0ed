#include "train/step/random_state.h"

#include <mutex>
#include <vector>

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Context.h>
#include <torch/torch.h>

#include <tarantella/base/error.h>

namespace tnt::train {
namespace {

std::vector<at::Generator> generators(torch::Device device) {
  std::vector<at::Generator> out{at::detail::getDefaultCPUGenerator()};
  if (device.is_cuda()) out.push_back(at::globalContext().defaultGenerator(device));
  return out;
}

torch::Tensor state_of(at::Generator& g) {
  std::lock_guard<std::mutex> lock(g.mutex());
  return g.get_state();
}

}  // namespace

torch::Tensor random_state(torch::Device device) {
  std::vector<at::Generator> all = generators(device);
  if (all.size() == 1) return state_of(all[0]);
  std::vector<torch::Tensor> parts;
  for (at::Generator& g : all) parts.push_back(state_of(g));
  return torch::cat(parts);
}

void set_random_state(torch::Device device, const torch::Tensor& state) {
  std::vector<at::Generator> all = generators(device);
  std::int64_t at = 0;
  for (std::size_t i = 0; i < all.size(); ++i) {
    // Each generator's state has a fixed size: its current one's.
    const std::int64_t n = i + 1 < all.size() ? state_of(all[i]).numel() : state.numel() - at;
    TNT_CHECK(n > 0 && at + n <= state.numel(), "internal error: a random generator state of ",
              state.numel(), " bytes does not fit the generators of ", device);
    std::lock_guard<std::mutex> lock(all[i].mutex());
    all[i].set_state(state.narrow(0, at, n).clone());
    at += n;
  }
}

void seed_random(torch::Device device, std::uint64_t seed) {
  for (at::Generator& g : generators(device)) {
    std::lock_guard<std::mutex> lock(g.mutex());
    g.set_current_seed(seed);
  }
}

torch::Tensor gpu_random_state(torch::Device device) {
  if (!device.is_cuda()) return torch::empty({0}, torch::kUInt8);
  at::Generator g = at::globalContext().defaultGenerator(device);
  return state_of(g);
}

bool set_gpu_random_state(torch::Device device, const torch::Tensor& state) {
  if (!device.is_cuda()) return false;
  at::Generator g = at::globalContext().defaultGenerator(device);
  if (state.numel() == 0 || state.numel() != state_of(g).numel()) return false;
  std::lock_guard<std::mutex> lock(g.mutex());
  g.set_state(state.to(torch::kUInt8).contiguous().clone());
  return true;
}

}  // namespace tnt::train
