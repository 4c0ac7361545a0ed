// The loss and metrics' state vector (see metrics_accumulator.h).
#include "train/step/metrics_accumulator.h"

#include <torch/torch.h>

#include <tarantella/base/error.h>

namespace tnt::train {

MetricsAccumulator::MetricsAccumulator(const std::vector<metrics::Metric>& metrics)
    : metrics_(&metrics) {}

std::int64_t MetricsAccumulator::size() const {
  std::int64_t n = 2;
  for (const auto& m : *metrics_) n += m.state_size;
  return n;
}

torch::Tensor MetricsAccumulator::increment(const torch::Tensor& output,
                                            const torch::Tensor& target,
                                            const torch::Tensor& mean_loss,
                                            std::int64_t samples) const {
  // On the loss's device: no value comes to the host (train/observe/host_reads.h).
  torch::NoGradGuard no_grad;
  const torch::Tensor loss = mean_loss.detach().to(torch::kFloat64).reshape({-1});
  std::vector<torch::Tensor> parts;
  parts.push_back(loss * static_cast<double>(samples));
  parts.push_back(torch::full({1}, static_cast<double>(samples), loss.options()));
  for (const auto& m : *metrics_) {
    const torch::Tensor s = state_on(m.update(output.detach(), target), loss.device());
    TNT_CHECK(s.numel() == m.state_size, "metric '", m.name, "' returned ", s.numel(),
              " state values, declared ", m.state_size);
    parts.push_back(s);
  }
  return torch::cat(parts);
}

callbacks::Logs MetricsAccumulator::logs(const std::vector<double>& state) const {
  callbacks::Logs logs;
  logs["loss"] = state[1] > 0 ? state[0] / state[1] : 0.0;
  std::size_t at = 2;
  for (const auto& m : *metrics_) {
    std::vector<double> s(state.begin() + static_cast<std::ptrdiff_t>(at),
                          state.begin() + static_cast<std::ptrdiff_t>(at + m.state_size));
    logs[m.name] = m.result(s);
    at += static_cast<std::size_t>(m.state_size);
  }
  return logs;
}

torch::Tensor state_on(const torch::Tensor& values, torch::Device device) {
  const torch::Tensor flat = values.detach().reshape({-1}).to(torch::kFloat64);
  if (!device.is_cuda() || !flat.device().is_cpu()) return flat.to(device);
  // The caching host allocator keeps the page-locked block until the copy is done.
  return flat.pin_memory().to(device, /*non_blocking=*/true);
}

std::vector<double> allreduce_state(const comm::ProcessGroup& group,
                                    const std::vector<double>& local) {
  torch::Tensor t = torch::tensor(local, torch::kFloat64);
  group.allreduce(t);
  return std::vector<double>(t.data_ptr<double>(), t.data_ptr<double>() + t.numel());  // host-only: a host tensor
}

}  // namespace tnt::train
