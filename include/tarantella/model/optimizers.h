// Optimizers are given as factories: the Model builds the optimizer over its
// own parameters when it compiles. Any torch::optim optimizer can be used
// through custom().
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include <torch/types.h>

namespace torch::optim {
class Optimizer;
}

namespace tnt::optimizers {

/// Builds an optimizer over the given parameters.
/// Example: tnt::optimizers::custom([](auto params) {
///            return std::make_unique<torch::optim::SGD>(params, torch::optim::SGDOptions(0.1)); })
using Factory =
    std::function<std::unique_ptr<torch::optim::Optimizer>(const std::vector<torch::Tensor>&)>;

Factory SGD(double learning_rate, double momentum = 0.0, bool nesterov = false,
            double weight_decay = 0.0);
Factory Adam(double learning_rate = 1e-3, double beta1 = 0.9, double beta2 = 0.999,
             double epsilon = 1e-7, double weight_decay = 0.0);
Factory AdamW(double learning_rate = 1e-3, double weight_decay = 1e-2, double beta1 = 0.9,
              double beta2 = 0.999, double epsilon = 1e-7);
Factory RMSprop(double learning_rate = 1e-3, double rho = 0.9, double momentum = 0.0,
                double epsilon = 1e-7);
Factory Adagrad(double learning_rate = 1e-3, double initial_accumulator = 0.1);
Factory custom(Factory factory);

}  // namespace tnt::optimizers
