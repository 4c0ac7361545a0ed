// Optimizers are given as factories: the Model builds the optimizer over its
// own parameters when it compiles. Any torch::optim optimizer can be used
// through custom(). Each built-in takes an options struct (whose member
// initialisers are its defaults, the only copy of them) or, for source
// compatibility, positional arguments that forward to it.
#pragma once

#include <tarantella/base/arg.h>

#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>
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

/// SGD (torch::optim::SGD); the learning rate has no default.
/// Example: tnt::optimizers::SGD(tnt::optimizers::SGDOptions(0.1).momentum(0.9).nesterov(true))
struct SGDOptions {
  explicit SGDOptions(double learning_rate) : learning_rate_(learning_rate) {}
  TNT_ARG(double, learning_rate);
  TNT_ARG(double, momentum) = 0.0;
  /// Nesterov momentum; needs momentum > 0.
  TNT_ARG(bool, nesterov) = false;
  TNT_ARG(double, weight_decay) = 0.0;
};

/// Adam (torch::optim::Adam, L2 weight decay added to the gradient);
/// epsilon's default is Keras's.
/// Example: tnt::optimizers::Adam(tnt::optimizers::AdamOptions().learning_rate(1e-2).beta2(0.98))
struct AdamOptions {
  TNT_ARG(double, learning_rate) = 1e-3;
  TNT_ARG(double, beta1) = 0.9;
  TNT_ARG(double, beta2) = 0.999;
  TNT_ARG(double, epsilon) = 1e-7;
  TNT_ARG(double, weight_decay) = 0.0;
};

/// AdamW (torch::optim::AdamW, decoupled weight decay).
/// Example: tnt::optimizers::AdamW(tnt::optimizers::AdamWOptions().weight_decay(0.1))
struct AdamWOptions {
  TNT_ARG(double, learning_rate) = 1e-3;
  TNT_ARG(double, weight_decay) = 1e-2;
  TNT_ARG(double, beta1) = 0.9;
  TNT_ARG(double, beta2) = 0.999;
  TNT_ARG(double, epsilon) = 1e-7;
};

/// RMSprop (torch::optim::RMSprop; rho is PyTorch's alpha).
/// Example: tnt::optimizers::RMSprop(tnt::optimizers::RMSpropOptions().momentum(0.9))
struct RMSpropOptions {
  TNT_ARG(double, learning_rate) = 1e-3;
  TNT_ARG(double, rho) = 0.9;
  TNT_ARG(double, momentum) = 0.0;
  TNT_ARG(double, epsilon) = 1e-7;
};

/// Adagrad (torch::optim::Adagrad).
/// Example: tnt::optimizers::Adagrad(tnt::optimizers::AdagradOptions().learning_rate(0.01))
struct AdagradOptions {
  TNT_ARG(double, learning_rate) = 1e-3;
  TNT_ARG(double, initial_accumulator_value) = 0.1;
};

/// Each options struct's fields under their Keras names, each once: the one
/// list that a factory's config (get_config, from_config) and the Python
/// front end's keyword arguments go through. Add a new TNT_ARG here too.
template <typename Visit>
void fields(SGDOptions& o, Visit&& v) {
  v("learning_rate", o.learning_rate());
  v("momentum", o.momentum());
  v("nesterov", o.nesterov());
  v("weight_decay", o.weight_decay());
}
template <typename Visit>
void fields(AdamOptions& o, Visit&& v) {
  v("learning_rate", o.learning_rate());
  v("beta_1", o.beta1());
  v("beta_2", o.beta2());
  v("epsilon", o.epsilon());
  v("weight_decay", o.weight_decay());
}
template <typename Visit>
void fields(AdamWOptions& o, Visit&& v) {
  v("learning_rate", o.learning_rate());
  v("weight_decay", o.weight_decay());
  v("beta_1", o.beta1());
  v("beta_2", o.beta2());
  v("epsilon", o.epsilon());
}
template <typename Visit>
void fields(RMSpropOptions& o, Visit&& v) {
  v("learning_rate", o.learning_rate());
  v("rho", o.rho());
  v("momentum", o.momentum());
  v("epsilon", o.epsilon());
}
template <typename Visit>
void fields(AdagradOptions& o, Visit&& v) {
  v("learning_rate", o.learning_rate());
  v("initial_accumulator_value", o.initial_accumulator_value());
}

Factory SGD(SGDOptions options);
Factory Adam(AdamOptions options = AdamOptions());
Factory AdamW(AdamWOptions options = AdamWOptions());
Factory RMSprop(RMSpropOptions options = RMSpropOptions());
Factory Adagrad(AdagradOptions options = AdagradOptions());

// The positional forms of before the options structs; each forwards to the
// options form, and an argument left out takes the struct's default.
Factory SGD(double learning_rate, double momentum = SGDOptions(0).momentum(),
            bool nesterov = SGDOptions(0).nesterov(),
            double weight_decay = SGDOptions(0).weight_decay());
Factory Adam(double learning_rate, double beta1 = AdamOptions().beta1(),
             double beta2 = AdamOptions().beta2(), double epsilon = AdamOptions().epsilon(),
             double weight_decay = AdamOptions().weight_decay());
Factory AdamW(double learning_rate, double weight_decay = AdamWOptions().weight_decay(),
              double beta1 = AdamWOptions().beta1(), double beta2 = AdamWOptions().beta2(),
              double epsilon = AdamWOptions().epsilon());
Factory RMSprop(double learning_rate, double rho = RMSpropOptions().rho(),
                double momentum = RMSpropOptions().momentum(),
                double epsilon = RMSpropOptions().epsilon());
Factory Adagrad(double learning_rate,
                double initial_accumulator = AdagradOptions().initial_accumulator_value());

/// Rebuilds a built-in optimizer from its description (Factory::config,
/// parsed); a field left out takes the options struct's default. An unknown
/// class name is a tnt::Error naming it and the registered ones.
/// Example: auto f = tnt::optimizers::from_config(nlohmann::json::parse(Adam(1e-2).config));
Factory from_config(const nlohmann::json& description);
/// The optimizer a name stands for, with its defaults, as Keras's
/// optimizers.get: a class name ("Adam") or Keras's short name ("adam",
/// "sgd": SGD at Keras's learning rate 0.01). An unknown name is a
/// tnt::ArgumentError naming it and every known name.
/// Example: model.compile(tnt::CompileOptions().optimizer(tnt::optimizers::get("adam")) ...)
Factory get(const std::string& name);
Factory custom(Factory factory);

}  // namespace tnt::optimizers
