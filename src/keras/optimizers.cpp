#include <tarantella/keras/optimizers.h>

#include <cmath>

#include <tarantella/base/error.h>
#include <torch/torch.h>

#include "keras/describe.h"

namespace tnt::optimizers {
namespace optim = torch::optim;
namespace {
// NaN passes every "> 0" check written as "reject <= 0", so test finiteness.
void check_learning_rate(const char* optimizer, double lr) {
  TNT_CHECK(std::isfinite(lr) && lr >= 0, optimizer, ": learning_rate must be a finite number >= 0, got ",
            lr);
}
}  // namespace

std::unique_ptr<torch::optim::Optimizer> Factory::operator()(
    const std::vector<torch::Tensor>& params) const {
  return fn(params);
}

Factory SGD(double lr, double momentum, bool nesterov, double weight_decay) {
  check_learning_rate("SGD", lr);
  TNT_CHECK(!nesterov || momentum > 0, "SGD with nesterov=true needs momentum > 0, got ", momentum);
  return Factory(
      [=](const std::vector<torch::Tensor>& params) {
        return std::make_unique<optim::SGD>(
            params,
            optim::SGDOptions(lr).momentum(momentum).nesterov(nesterov).weight_decay(weight_decay));
      },
      describe("SGD", {{"learning_rate", lr},
                       {"momentum", momentum},
                       {"nesterov", nesterov},
                       {"weight_decay", weight_decay}}));
}

Factory Adam(double lr, double beta1, double beta2, double epsilon, double weight_decay) {
  check_learning_rate("Adam", lr);
  return Factory(
      [=](const std::vector<torch::Tensor>& params) {
        return std::make_unique<optim::Adam>(
            params,
            optim::AdamOptions(lr).betas({beta1, beta2}).eps(epsilon).weight_decay(weight_decay));
      },
      describe("Adam", {{"learning_rate", lr},
                        {"beta_1", beta1},
                        {"beta_2", beta2},
                        {"epsilon", epsilon},
                        {"weight_decay", weight_decay}}));
}

Factory AdamW(double lr, double weight_decay, double beta1, double beta2, double epsilon) {
  check_learning_rate("AdamW", lr);
  return Factory(
      [=](const std::vector<torch::Tensor>& params) {
        return std::make_unique<optim::AdamW>(
            params,
            optim::AdamWOptions(lr).betas({beta1, beta2}).eps(epsilon).weight_decay(weight_decay));
      },
      describe("AdamW", {{"learning_rate", lr},
                         {"weight_decay", weight_decay},
                         {"beta_1", beta1},
                         {"beta_2", beta2},
                         {"epsilon", epsilon}}));
}

Factory RMSprop(double lr, double rho, double momentum, double epsilon) {
  check_learning_rate("RMSprop", lr);
  return Factory(
      [=](const std::vector<torch::Tensor>& params) {
        return std::make_unique<optim::RMSprop>(
            params, optim::RMSpropOptions(lr).alpha(rho).momentum(momentum).eps(epsilon));
      },
      describe(
          "RMSprop",
          {{"learning_rate", lr}, {"rho", rho}, {"momentum", momentum}, {"epsilon", epsilon}}));
}

Factory Adagrad(double lr, double initial_accumulator) {
  check_learning_rate("Adagrad", lr);
  return Factory(
      [=](const std::vector<torch::Tensor>& params) {
        return std::make_unique<optim::Adagrad>(
            params, optim::AdagradOptions(lr).initial_accumulator_value(initial_accumulator));
      },
      describe("Adagrad",
               {{"learning_rate", lr}, {"initial_accumulator_value", initial_accumulator}}));
}

Factory custom(Factory factory) {
  TNT_CHECK(static_cast<bool>(factory), "optimizers::custom() needs a factory function");
  return factory;
}

}  // namespace tnt::optimizers
