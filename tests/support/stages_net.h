// The pipeline tests' network and data (tests/unit/pipeline_test.cpp,
// tests/mpi/pipeline_test.cpp): five Linear layers with activations between,
// optionally a SplitPoint after the second, the same initial weights every
// time; and `n` labelled samples of 6 features.
#pragma once

#include <cstdint>
#include <mutex>

#include <torch/torch.h>

#include <tarantella/data/dataset.h>
#include <tarantella/model/pipeline.h>

namespace tnt_test {

/// `random_layers`: with Dropout in the first and the last layers and a
/// BatchNorm1d (running statistics) in between, whatever the cut.
inline torch::nn::Sequential stages_net(bool split_point, bool random_layers = false) {
  static std::mutex seed;  // the global generator: one net at a time
  std::lock_guard<std::mutex> lock(seed);
  torch::manual_seed(7);
  torch::nn::Sequential net;
  net->push_back(torch::nn::Linear(6, 24));
  net->push_back(torch::nn::ReLU());
  if (random_layers) net->push_back(torch::nn::Dropout(0.25));
  net->push_back(torch::nn::Linear(24, 24));
  if (split_point) net->push_back(tnt::nn::SplitPoint());
  if (random_layers) net->push_back(torch::nn::BatchNorm1d(24));
  net->push_back(torch::nn::Tanh());
  net->push_back(torch::nn::Linear(24, 16));
  net->push_back(torch::nn::ReLU());
  if (random_layers) net->push_back(torch::nn::Dropout(0.25));
  net->push_back(torch::nn::Linear(16, 4));
  return net;
}

inline tnt::data::Dataset stages_samples(std::int64_t n) {
  torch::Generator g = at::detail::createCPUGenerator(5);
  return tnt::data::Dataset::from_tensor_slices(
      {torch::randn({n, 6}, g), torch::randint(0, 4, {n}, g)});
}

}  // namespace tnt_test
