// The per-parameter state of the built-in element-wise optimizers, one
// StateKind each (see optimizer_state.h), and what is built on them: the
// state copy a background checkpoint serializes, the state's size.
#include "dp/optimizer_state.h"

#include <typeinfo>

#include <torch/torch.h>

#include <tarantella/base/error.h>

namespace tnt::dp {
namespace {

using torch::optim::OptimizerParamState;
using StatePtr = std::unique_ptr<OptimizerParamState>;

template <class O>
bool is_a(const torch::optim::Optimizer& o) {
  return dynamic_cast<const O*>(&o) != nullptr;
}

template <class O>
bool exactly(const torch::optim::Optimizer& o) {
  return typeid(o) == typeid(O);
}

template <class O, class Options>
std::unique_ptr<torch::optim::Optimizer> empty_like(const torch::optim::Optimizer& o) {
  return std::make_unique<O>(std::vector<torch::optim::OptimizerParamGroup>{},
                             static_cast<const Options&>(o.defaults()));
}

template <class S>
const S& as(const OptimizerParamState& s) {
  return static_cast<const S&>(s);
}

const std::vector<StateKind>& state_kinds() {
  using namespace torch::optim;
  static const std::vector<StateKind> kinds = {
      {"SGD", 1, is_a<SGD>,
       [](const OptimizerParamState& s) {
         return std::vector<torch::Tensor>{as<SGDParamState>(s).momentum_buffer()};
       },
       [](const OptimizerParamState&) -> std::int64_t { return 0; },
       [](const std::vector<torch::Tensor>& t, std::int64_t) -> StatePtr {
         auto s = std::make_unique<SGDParamState>();
         s->momentum_buffer(t[0]);
         return s;
       },
       exactly<SGD>, empty_like<SGD, SGDOptions>},
      {"Adam", 3, is_a<Adam>,
       [](const OptimizerParamState& s) {
         const auto& a = as<AdamParamState>(s);
         return std::vector<torch::Tensor>{a.exp_avg(), a.exp_avg_sq(), a.max_exp_avg_sq()};
       },
       [](const OptimizerParamState& s) { return as<AdamParamState>(s).step(); },
       [](const std::vector<torch::Tensor>& t, std::int64_t step) -> StatePtr {
         auto s = std::make_unique<AdamParamState>();
         s->step(step).exp_avg(t[0]).exp_avg_sq(t[1]).max_exp_avg_sq(t[2]);
         return s;
       },
       exactly<Adam>, empty_like<Adam, AdamOptions>},
      {"AdamW", 3, is_a<AdamW>,
       [](const OptimizerParamState& s) {
         const auto& a = as<AdamWParamState>(s);
         return std::vector<torch::Tensor>{a.exp_avg(), a.exp_avg_sq(), a.max_exp_avg_sq()};
       },
       [](const OptimizerParamState& s) { return as<AdamWParamState>(s).step(); },
       [](const std::vector<torch::Tensor>& t, std::int64_t step) -> StatePtr {
         auto s = std::make_unique<AdamWParamState>();
         s->step(step).exp_avg(t[0]).exp_avg_sq(t[1]).max_exp_avg_sq(t[2]);
         return s;
       },
       exactly<AdamW>, empty_like<AdamW, AdamWOptions>},
      {"RMSprop", 3, is_a<RMSprop>,
       [](const OptimizerParamState& s) {
         const auto& r = as<RMSpropParamState>(s);
         return std::vector<torch::Tensor>{r.square_avg(), r.momentum_buffer(), r.grad_avg()};
       },
       [](const OptimizerParamState& s) { return as<RMSpropParamState>(s).step(); },
       [](const std::vector<torch::Tensor>& t, std::int64_t step) -> StatePtr {
         auto s = std::make_unique<RMSpropParamState>();
         s->step(step).square_avg(t[0]).momentum_buffer(t[1]).grad_avg(t[2]);
         return s;
       },
       exactly<RMSprop>, empty_like<RMSprop, RMSpropOptions>},
      {"Adagrad", 1, is_a<Adagrad>,
       [](const OptimizerParamState& s) {
         return std::vector<torch::Tensor>{as<AdagradParamState>(s).sum()};
       },
       [](const OptimizerParamState& s) { return as<AdagradParamState>(s).step(); },
       [](const std::vector<torch::Tensor>& t, std::int64_t step) -> StatePtr {
         auto s = std::make_unique<AdagradParamState>();
         s->sum(t[0]).step(step);
         return s;
       },
       exactly<Adagrad>, empty_like<Adagrad, AdagradOptions>},
  };
  return kinds;
}

}  // namespace

const StateKind* state_kind(const torch::optim::Optimizer& optimizer) {
  for (const StateKind& k : state_kinds()) {
    if (k.matches(optimizer)) return &k;
  }
  return nullptr;
}

std::string state_kind_names() {
  std::string known;
  for (const auto& k : state_kinds()) known += (known.empty() ? "" : ", ") + std::string(k.name);
  return known;
}

bool updates_element_wise(const torch::optim::Optimizer& optimizer) {
  return state_kind(optimizer) != nullptr;
}

std::unique_ptr<torch::optim::Optimizer> state_copy(
    const torch::optim::Optimizer& optimizer,
    const std::function<torch::Tensor(const torch::Tensor&)>& copy) {
  const StateKind* kind = state_kind(optimizer);
  if (kind == nullptr || !kind->exactly(optimizer)) return nullptr;
  const StateKind& k = *kind;
  std::unique_ptr<torch::optim::Optimizer> out = k.empty_like(optimizer);
  // Copied as they are (OptimizerParamGroup's copy clones the options), not
  // through add_param_group, which LibTorch 2.x merges with the defaults.
  for (const auto& group : optimizer.param_groups()) out->param_groups().push_back(group);
  for (const auto& [key, state] : optimizer.state()) {
    std::vector<torch::Tensor> tensors = k.tensors(*state);
    for (auto& t : tensors) {
      if (t.defined()) t = copy(t);
    }
    out->state()[key] = k.make(tensors, k.step(*state));
  }
  return out;
}

std::int64_t optimizer_state_bytes(const torch::optim::Optimizer& optimizer) {
  const StateKind* kind = state_kind(optimizer);
  TNT_CHECK(kind != nullptr, "optimizer_state_bytes: unknown optimizer type");
  std::int64_t bytes = 0;
  for (const auto& [key, state] : optimizer.state()) {
    for (const auto& t : kind->tensors(*state)) {
      if (t.defined()) bytes += t.numel() * static_cast<std::int64_t>(t.element_size());
    }
  }
  return bytes;
}

}  // namespace tnt::dp
