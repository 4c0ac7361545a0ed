// Private: the loss and the metrics as one float64 state vector, the form
// in which the loops add them up over micro-batches, steps and ranks (one
// allreduce, or a ride on the last gradient bucket) and read them back as
// logs. Layout: [loss × samples, samples, each metric's state...].
//
// Why a class of its own: the step, the fit loop and the evaluation loop
// all make increments and read logs, and nothing else of the engine is
// needed for that.
#pragma once

#include <cstdint>
#include <vector>

#include <torch/types.h>

#include <tarantella/comm/process_group.h>
#include <tarantella/train/callback.h>
#include <tarantella/keras/metrics.h>

namespace tnt::train {

class MetricsAccumulator {
 public:
  /// Over `metrics` (the compiled ones; must outlive it).
  explicit MetricsAccumulator(const std::vector<metrics::Metric>& metrics);

  /// Values in the state vector.
  std::int64_t size() const;
  /// A micro-batch's increment, on the loss's device (no host read):
  /// `mean_loss` over `samples` samples, and each metric's update.
  torch::Tensor increment(const torch::Tensor& output, const torch::Tensor& target,
                          const torch::Tensor& mean_loss, std::int64_t samples) const;
  /// The logs of a summed state: {"loss": mean, metric: result, ...}.
  callbacks::Logs logs(const std::vector<double>& state) const;

 private:
  const std::vector<metrics::Metric>* metrics_;
};

/// `values` flattened to float64 on `device`. From host memory to a GPU
/// through page-locked memory without blocking: a copy from pageable memory
/// would make the host wait for the stream (a sync per step for a metric
/// that computes its state on the CPU).
torch::Tensor state_on(const torch::Tensor& values, torch::Device device);

/// Sums a float64 state vector over the group's ranks (blocking).
std::vector<double> allreduce_state(const comm::ProcessGroup& group,
                                    const std::vector<double>& local);

}  // namespace tnt::train
