// Optimizers are given as factories: the Model builds the optimizer over its
// own parameters when it compiles. Any torch::optim optimizer can be used
// through custom().
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <torch/types.h>

namespace torch::optim {
class Optimizer;
}

namespace tnt::optimizers {

/// Builds an optimizer over the given parameters. The built-in factories
/// also carry a description (`config`, JSON) so that Model::save can store
/// the compile configuration and tnt::models::load_model can rebuild it;
/// a custom factory has none.
/// Example: tnt::optimizers::custom([](auto params) {
///            return std::make_unique<torch::optim::SGD>(params, torch::optim::SGDOptions(0.1)); })
struct Factory {
  using Fn =
      std::function<std::unique_ptr<torch::optim::Optimizer>(const std::vector<torch::Tensor>&)>;
  Factory() = default;
  Factory(Fn fn, std::string config) : fn(std::move(fn)), config(std::move(config)) {}
  template <typename F, typename = std::enable_if_t<!std::is_same_v<std::decay_t<F>, Factory> &&
                                                    std::is_constructible_v<Fn, F>>>
  Factory(F&& f) : fn(std::forward<F>(f)) {}  // NOLINT: implicit, like std::function
  std::unique_ptr<torch::optim::Optimizer> operator()(const std::vector<torch::Tensor>& p) const;
  explicit operator bool() const { return static_cast<bool>(fn); }

  Fn fn;
  /// {"class_name": "SGD", "config": {...}}; empty for a custom optimizer.
  std::string config;
};

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
