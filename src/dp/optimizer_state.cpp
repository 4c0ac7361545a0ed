// The per-parameter state of the built-in element-wise optimizers, one
// StateKind each (see optimizer_state.h), and what is built on them: the
// state copy a background checkpoint serializes, the state's size.
#include "dp/optimizer_state.h"

#include <tuple>
#include <type_traits>
#include <typeinfo>
#include <utility>

#include <torch/torch.h>

#include <tarantella/base/error.h>

#include "dp/foreach_sgd.h"

namespace tnt::dp {
namespace {

using torch::optim::OptimizerParamState;
using StatePtr = std::unique_ptr<OptimizerParamState>;

// Whether state type S counts steps (SGD's does not: its StateKind says 0).
template <class S, class = void>
struct CountsSteps : std::false_type {};
template <class S>
struct CountsSteps<S, std::void_t<decltype(std::declval<const S&>().step())>> : std::true_type {};

// The tensors of each state type, named once: of(state) ties them, as
// references into `state` (const or not), so reading and building a state
// walk the same list. AdamW keeps the same three as Adam.
struct SgdTensors {
  template <class S>
  static auto of(S& s) {
    return std::tie(s.momentum_buffer());
  }
};
struct AdamTensors {
  template <class S>
  static auto of(S& s) {
    return std::tie(s.exp_avg(), s.exp_avg_sq(), s.max_exp_avg_sq());
  }
};
struct RmspropTensors {
  template <class S>
  static auto of(S& s) {
    return std::tie(s.square_avg(), s.momentum_buffer(), s.grad_avg());
  }
};
struct AdagradTensors {
  template <class S>
  static auto of(S& s) {
    return std::tie(s.sum());
  }
};

// The StateKind of optimizer type O, with its options type, its
// per-parameter state type and that state's tensors (Fields): all the rest
// is the same for every type.
template <class O, class Options, class State, class Fields>
struct KindOf {
  static bool matches(const torch::optim::Optimizer& o) {
    return dynamic_cast<const O*>(&o) != nullptr;
  }
  static bool exactly(const torch::optim::Optimizer& o) { return typeid(o) == typeid(O); }
  static std::unique_ptr<torch::optim::Optimizer> empty_like(const torch::optim::Optimizer& o) {
    return std::make_unique<O>(std::vector<torch::optim::OptimizerParamGroup>{},
                               static_cast<const Options&>(o.defaults()));
  }
  static std::vector<torch::Tensor> tensors(const OptimizerParamState& s) {
    return std::apply([](const auto&... t) { return std::vector<torch::Tensor>{t...}; },
                      Fields::of(static_cast<const State&>(s)));
  }
  static std::int64_t step(const OptimizerParamState& s) {
    if constexpr (CountsSteps<State>::value) return static_cast<const State&>(s).step();
    return 0;
  }
  static StatePtr make(const std::vector<torch::Tensor>& tensors, std::int64_t step) {
    auto s = std::make_unique<State>();
    // The tensors in Fields' order (the comma fold runs left to right).
    auto set = [&](auto&... field) {
      std::size_t i = 0;
      ((field = tensors.at(i++)), ...);
    };
    std::apply(set, Fields::of(*s));
    if constexpr (CountsSteps<State>::value) s->step(step);
    return s;
  }
  static StateKind kind(const char* name) {
    const std::size_t fields = std::tuple_size_v<decltype(Fields::of(std::declval<State&>()))>;
    return {name, fields, matches, tensors, step, make, exactly, empty_like};
  }
};

const std::vector<StateKind>& state_kinds() {
  using namespace torch::optim;
  static const std::vector<StateKind> kinds = {
      // Before SGD's, which it would match too (dynamic_cast): copies and
      // empty_like of tnt's SGD stay ForeachSGD; the name, the options and
      // the state are SGD's.
      KindOf<ForeachSGD, SGDOptions, SGDParamState, SgdTensors>::kind("SGD"),
      KindOf<SGD, SGDOptions, SGDParamState, SgdTensors>::kind("SGD"),
      KindOf<Adam, AdamOptions, AdamParamState, AdamTensors>::kind("Adam"),
      KindOf<AdamW, AdamWOptions, AdamWParamState, AdamTensors>::kind("AdamW"),
      KindOf<RMSprop, RMSpropOptions, RMSpropParamState, RmspropTensors>::kind("RMSprop"),
      KindOf<Adagrad, AdagradOptions, AdagradParamState, AdagradTensors>::kind("Adagrad"),
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
