// Private: what Tarantella knows of an optimizer's per-parameter state, for
// the built-in element-wise optimizers (SGD, Adam, AdamW, RMSprop, Adagrad).
//
// torch::optim keeps each parameter's state behind the base class
// OptimizerParamState; its tensors (momentum, moments, sums) are fields of
// the derived class, different for every optimizer type. The sharded
// optimizer slices and gathers those tensors, the background checkpoint
// copies them, the memory report counts them: a StateKind reads and builds
// one type's state as a plain list of tensors and a step counter, so that
// that code is written once for all the types.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <torch/types.h>

namespace torch::optim {
class Optimizer;
class OptimizerParamState;
}  // namespace torch::optim

namespace tnt::dp {

/// One optimizer type's per-parameter state as a list of tensors (each
/// shaped like the parameter, undefined when an option is off) and a step
/// counter (0 for a type without one).
struct StateKind {
  const char* name;
  std::size_t fields;  // tensors in the state
  bool (*matches)(const torch::optim::Optimizer&);
  std::vector<torch::Tensor> (*tensors)(const torch::optim::OptimizerParamState&);
  std::int64_t (*step)(const torch::optim::OptimizerParamState&);
  std::unique_ptr<torch::optim::OptimizerParamState> (*make)(const std::vector<torch::Tensor>&,
                                                             std::int64_t step);
  bool (*exactly)(const torch::optim::Optimizer&);  // of this type, not a subclass
  // The same type with the same defaults, no groups, no state.
  std::unique_ptr<torch::optim::Optimizer> (*empty_like)(const torch::optim::Optimizer&);
};

/// `optimizer`'s kind (a subclass gets its base's), or null: not one of the
/// built-in element-wise optimizers.
const StateKind* state_kind(const torch::optim::Optimizer& optimizer);

/// The names of the optimizer types with a kind: "SGD, Adam, ...".
std::string state_kind_names();

/// A copy of `optimizer` to serialize later, on any thread, while training
/// goes on with the original: the same type, defaults and parameter groups
/// (their options copied, the parameters shared: torch::optim's save writes
/// only their identity), and every parameter's state with its tensors
/// replaced by `copy(tensor)`. save() on it writes what save() on the
/// original writes now. Null for an optimizer whose state this does not know
/// (LBFGS, a subclass, a user's own): serialize that one at once instead.
std::unique_ptr<torch::optim::Optimizer> state_copy(
    const torch::optim::Optimizer& optimizer,
    const std::function<torch::Tensor(const torch::Tensor&)>& copy);

/// Bytes of the tensors in `optimizer`'s state (this rank's).
std::int64_t optimizer_state_bytes(const torch::optim::Optimizer& optimizer);

/// Whether `optimizer` updates each parameter on its own, element by
/// element (the built-in SGD, Adam, AdamW, RMSprop, Adagrad): then a step
/// of some parameters, or of parts of them, is the same arithmetic as
/// theirs in a whole step.
bool updates_element_wise(const torch::optim::Optimizer& optimizer);

}  // namespace tnt::dp
