// Private: the optimizer's per-parameter state keyed by the parameter's
// name, so that a checkpoint's optimizer state maps onto the parameters of
// any pipeline layout.
//
// torch::optim's own serialization (Optimizer::save) keys the state by the
// parameter's position in its group: it fits only an optimizer over the
// same parameters in the same groups. With pipeline stages each rank's
// optimizer holds its stage's parameters only, and a checkpoint written at
// one layout is loaded at another (or without stages). So a checkpoint of a
// pipelined model stores, for every trainable parameter of the whole model,
// under the name its unsplit module gives it (named_parameters()):
//   optimizer_by_name: {name: {"lr": float, ["step": int, "0": t, "1": t, ...]}}
//   optimizer_kind:    "SGD" | "Adam" | ...   (dp::StateKind's name)
// "lr" is the learning rate of the parameter's group; "step" and the
// numbered tensors (the kind's fields, dp/optimizer_state.h, those in use)
// are present once the parameter has state. Only the built-in element-wise
// optimizers have a StateKind; others are refused with a clear error.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <ATen/core/Dict.h>
#include <torch/types.h>

#include <tarantella/keras/module_adapter.h>

namespace torch::optim {
class Optimizer;
}

namespace tnt::train {

struct ParamOptimizerState {
  double learning_rate = 0;
  bool has_state = false;
  std::int64_t step = 0;
  std::vector<torch::Tensor> tensors;  ///< the kind's fields; undefined where unused
};
using NamedOptimizerState = std::vector<std::pair<std::string, ParamOptimizerState>>;

/// The kind's name of `optimizer` ("SGD", ...); throws, naming `what` and
/// the known kinds, for an optimizer without one.
std::string optimizer_kind_name(const torch::optim::Optimizer& optimizer, const char* what);

/// `optimizer`'s state for each parameter of its groups, named by `params`
/// (the module's named_parameters()); `copy` is applied to each state tensor.
NamedOptimizerState optimizer_state_by_name(
    const torch::optim::Optimizer& optimizer, const NamedTensorList& params,
    const std::function<torch::Tensor(const torch::Tensor&)>& copy);

/// The names (by `params`, the module's named_parameters()) of the
/// parameters of `optimizer`'s groups, in its order, one per line: the
/// order its torch::optim bytes keep the state in, which is the user's
/// (an optimizer built over a permuted parameter list keeps that order).
/// Empty if it holds a tensor that is not one of `params`.
std::string optimizer_parameter_names(const torch::optim::Optimizer& optimizer,
                                      const NamedTensorList& params);

/// torch::optim's bytes (Optimizer::save) of an optimizer of `like`'s kind
/// with ONE parameter group over the parameters named `names`, in order
/// (the saver's order: optimizer_parameter_names, or, in files from before
/// it, named_parameters()'s): the state as an unsplit model saved it. Throws,
/// naming `path`, if the bytes do not fit (another group count or size).
NamedOptimizerState decode_optimizer_bytes(const torch::optim::Optimizer& like,
                                           const std::string& bytes,
                                           const std::vector<std::string>& names,
                                           const std::string& path);

/// As named tensors ("name\tfield"), for the gather over a pipeline, and back.
NamedTensorList to_named_tensors(const NamedOptimizerState& state);
NamedOptimizerState from_named_tensors(const NamedTensorList& tensors);

/// The checkpoint entry (see above), and back, checked (errors name `path`).
c10::impl::GenericDict to_entry(const NamedOptimizerState& state);
NamedOptimizerState from_entry(const c10::impl::GenericDict& entry, const std::string& path);

/// Checks that `saved` holds every trainable parameter of `optimizer` (named
/// by `params`) with tensors of its shape, saved by an optimizer of the same
/// kind (`saved_kind`), and returns what sets it: nothing changes before it
/// is called. Entries of other stages' parameters are left alone.
std::function<void()> prepare_optimizer_state(torch::optim::Optimizer& optimizer,
                                              const NamedTensorList& params,
                                              const NamedOptimizerState& saved,
                                              const std::string& saved_kind,
                                              const std::string& path,
                                              const torch::Device& device);

}  // namespace tnt::train
