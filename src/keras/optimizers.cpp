#include <tarantella/keras/optimizers.h>

#include <cmath>
#include <string>

#include <tarantella/base/error.h>
#include <torch/torch.h>

#include "dp/foreach_sgd.h"
#include "keras/describe.h"
#include "keras/registry.h"

namespace tnt::optimizers {
namespace optim = torch::optim;
using json = nlohmann::json;
namespace {
// NaN passes every "> 0" check written as "reject <= 0", so test finiteness.
void check_learning_rate(const char* optimizer, double lr) {
  TNT_CHECK(std::isfinite(lr) && lr >= 0, optimizer, ": learning_rate must be a finite number >= 0, got ",
            lr);
}

template <typename Options>
std::string config_of(const char* name, Options o) {
  return describe(name, keras::fields_to_config(o));
}

template <typename Options>
Options options_from(const char* name, const json& config, Options defaults) {
  return keras::options_from(std::string("optimizer ") + name, config, defaults);
}

// A reader that rebuilds optimizer `name` with `make` from its options.
template <typename Options>
keras::Registry<Factory>::Reader reader(const char* name, Factory (*make)(Options)) {
  return [name, make](const json& config) { return make(options_from(name, config, Options())); };
}

const keras::Registry<Factory>& registry() {
  static const auto* r = new keras::Registry<Factory>(  // never destroyed, as the layers'
      "optimizer", keras::compile_part_fix("an optimizer"),
      {{"SGD",
        [](const json& c) {
          const double lr = keras::field<double>("optimizer SGD", c, "learning_rate");
          return SGD(options_from("SGD", c, SGDOptions(lr)));
        }},
       {"Adam", reader<AdamOptions>("Adam", Adam)},
       {"AdamW", reader<AdamWOptions>("AdamW", AdamW)},
       {"RMSprop", reader<RMSpropOptions>("RMSprop", RMSprop)},
       {"Adagrad", reader<AdagradOptions>("Adagrad", Adagrad)}},
      // Keras's names. SGD's learning rate has no default in C++ (as in
      // torch::optim); by name it takes Keras's.
      {{"sgd", {{"class_name", "SGD"}, {"config", {{"learning_rate", 0.01}}}}},
       {"adam", {{"class_name", "Adam"}}},
       {"adamw", {{"class_name", "AdamW"}}},
       {"rmsprop", {{"class_name", "RMSprop"}}},
       {"adagrad", {{"class_name", "Adagrad"}}}});
  return *r;
}
}  // namespace

std::unique_ptr<torch::optim::Optimizer> Factory::operator()(
    const std::vector<torch::Tensor>& params) const {
  return fn(params);
}

Factory SGD(SGDOptions o) {
  check_learning_rate("SGD", o.learning_rate());
  TNT_CHECK(!o.nesterov() || o.momentum() > 0, "SGD with nesterov=true needs momentum > 0, got ",
            o.momentum());
  return Factory(
      [o](const std::vector<torch::Tensor>& params) {
        return std::make_unique<dp::ForeachSGD>(params,
                                                optim::SGDOptions(o.learning_rate())
                                                    .momentum(o.momentum())
                                                    .nesterov(o.nesterov())
                                                    .weight_decay(o.weight_decay()));
      },
      config_of("SGD", o));
}

Factory Adam(AdamOptions o) {
  check_learning_rate("Adam", o.learning_rate());
  return Factory(
      [o](const std::vector<torch::Tensor>& params) {
        return std::make_unique<optim::Adam>(params, optim::AdamOptions(o.learning_rate())
                                                         .betas({o.beta1(), o.beta2()})
                                                         .eps(o.epsilon())
                                                         .weight_decay(o.weight_decay()));
      },
      config_of("Adam", o));
}

Factory AdamW(AdamWOptions o) {
  check_learning_rate("AdamW", o.learning_rate());
  return Factory(
      [o](const std::vector<torch::Tensor>& params) {
        return std::make_unique<optim::AdamW>(params, optim::AdamWOptions(o.learning_rate())
                                                          .betas({o.beta1(), o.beta2()})
                                                          .eps(o.epsilon())
                                                          .weight_decay(o.weight_decay()));
      },
      config_of("AdamW", o));
}

Factory RMSprop(RMSpropOptions o) {
  check_learning_rate("RMSprop", o.learning_rate());
  return Factory(
      [o](const std::vector<torch::Tensor>& params) {
        return std::make_unique<optim::RMSprop>(params, optim::RMSpropOptions(o.learning_rate())
                                                            .alpha(o.rho())
                                                            .momentum(o.momentum())
                                                            .eps(o.epsilon()));
      },
      config_of("RMSprop", o));
}

Factory Adagrad(AdagradOptions o) {
  check_learning_rate("Adagrad", o.learning_rate());
  return Factory(
      [o](const std::vector<torch::Tensor>& params) {
        return std::make_unique<optim::Adagrad>(
            params, optim::AdagradOptions(o.learning_rate())
                        .initial_accumulator_value(o.initial_accumulator_value()));
      },
      config_of("Adagrad", o));
}

Factory SGD(double lr, double momentum, bool nesterov, double weight_decay) {
  return SGD(SGDOptions(lr).momentum(momentum).nesterov(nesterov).weight_decay(weight_decay));
}

Factory Adam(double lr, double beta1, double beta2, double epsilon, double weight_decay) {
  return Adam(
      AdamOptions().learning_rate(lr).beta1(beta1).beta2(beta2).epsilon(epsilon).weight_decay(
          weight_decay));
}

Factory AdamW(double lr, double weight_decay, double beta1, double beta2, double epsilon) {
  return AdamW(AdamWOptions()
                   .learning_rate(lr)
                   .weight_decay(weight_decay)
                   .beta1(beta1)
                   .beta2(beta2)
                   .epsilon(epsilon));
}

Factory RMSprop(double lr, double rho, double momentum, double epsilon) {
  return RMSprop(RMSpropOptions().learning_rate(lr).rho(rho).momentum(momentum).epsilon(epsilon));
}

Factory Adagrad(double lr, double initial_accumulator) {
  return Adagrad(AdagradOptions().learning_rate(lr).initial_accumulator_value(initial_accumulator));
}

Factory from_config(const json& description) { return registry().read(description); }

Factory get(const std::string& name) { return registry().get(name); }

Factory custom(Factory factory) {
  TNT_CHECK(static_cast<bool>(factory), "optimizers::custom() needs a factory function");
  return factory;
}

}  // namespace tnt::optimizers
