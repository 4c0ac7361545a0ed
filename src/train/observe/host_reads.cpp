#include "train/observe/host_reads.h"

#include <atomic>

#include <torch/torch.h>

#include <tarantella/base/error.h>

namespace tnt::train {
namespace {

std::atomic<std::int64_t>& counter() {
  static std::atomic<std::int64_t> reads{0};
  return reads;
}

}  // namespace

std::vector<double> read_state(const torch::Tensor& state) {
  ++counter();
  const torch::Tensor host = state.detach().to(torch::kCPU, torch::kFloat64).contiguous();
  const double* p = host.data_ptr<double>();
  return std::vector<double>(p, p + host.numel());
}

bool read_flag(const torch::Tensor& flag) {
  ++counter();
  TNT_CHECK(flag.numel() == 1, "internal error: a flag of ", flag.numel(), " values");
  return flag.detach().to(torch::kCPU, torch::kFloat64).item<double>() != 0.0;
}

std::int64_t host_reads() { return counter().load(); }

}  // namespace tnt::train
