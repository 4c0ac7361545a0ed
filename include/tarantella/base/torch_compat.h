// The one place where LibTorch versions differ for Tarantella.
//
// The tree builds against Debian 12's LibTorch 1.13 and against pip/conda
// torch 2.x (2.7 and newer: the first wheels built with the C++11 ABI, which
// the system libraries we link also use; CMakeLists.txt refuses an older
// ABI). Every difference between those APIs is absorbed here, behind a name
// of our own, so that no other file tests TORCH_VERSION_*:
//
//  * the optimizer's state map is keyed by the parameter's TensorImpl
//    address as a string in 1.13 and as the `void*` itself in 2.x: taken
//    from the map's own key type, so the code follows whichever torch it
//    is compiled against;
//  * torch::nn::Cloneable inherits Module virtually in 1.13 (the most
//    derived class names Module in its initializer list) and directly in
//    2.x (the class names Cloneable<Derived>): NamedModuleBase<Derived> is
//    the base to name;
//  * add_param_group merges a group's options with the optimizer's defaults
//    in 2.x (an option left at its type's default takes the optimizer's):
//    add_param_group_exact and copy_group_options keep a group's own;
//  * autocast is switched per device type in 2.x
//    (`at::autocast::set_autocast_enabled(kCUDA, ...)`) and by one function
//    per device in 1.13 (`set_enabled`, `set_cpu_enabled`);
//  * c10::Event tells the time between two events (elapsedTime) in 2.x
//    only: event_elapsed_ms, and kEventTiming says whether it can.
#pragma once

#include <sstream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <ATen/autocast_mode.h>
#include <c10/core/Event.h>
#include <torch/nn/cloneable.h>
#include <torch/optim/optimizer.h>
#include <torch/version.h>

namespace tnt::compat {

/// The key type of torch::optim::Optimizer::state().
using OptimizerStateKey =
    typename std::decay_t<decltype(std::declval<torch::optim::Optimizer&>().state())>::key_type;

namespace detail {
template <typename Key>
Key optimizer_state_key_as(const at::Tensor& t) {
  if constexpr (std::is_same_v<Key, std::string>) {
    std::ostringstream out;  // what 1.13's c10::guts::to_string wrote
    out << t.unsafeGetTensorImpl();
    return out.str();
  } else {
    return t.unsafeGetTensorImpl();
  }
}
}  // namespace detail

/// The key under which torch::optim keeps the state of parameter `t`.
/// Example: `optimizer.state().find(tnt::compat::optimizer_state_key(p))`.
inline OptimizerStateKey optimizer_state_key(const at::Tensor& t) {
  return detail::optimizer_state_key_as<OptimizerStateKey>(t);
}

/// Adds `params` as a new parameter group of `optimizer` with exactly
/// `options`. LibTorch 2.x's add_param_group replaces every option that
/// equals its type's default (momentum 0, weight decay 0, ...) by the
/// optimizer's own defaults, so a group "without momentum" beside one with
/// would silently get momentum; the options are set again after adding.
inline void add_param_group_exact(torch::optim::Optimizer& optimizer,
                                  std::vector<at::Tensor> params,
                                  const torch::optim::OptimizerOptions& options) {
  optimizer.add_param_group(torch::optim::OptimizerParamGroup(std::move(params), options.clone()));
  optimizer.param_groups().back().set_options(options.clone());
}

/// Makes the options of `optimizer`'s groups exactly those of `source`'s
/// (same number of groups): after constructing an optimizer from another's
/// groups, which LibTorch 2.x merges with the defaults as above.
inline void copy_group_options(torch::optim::Optimizer& optimizer,
                               const torch::optim::Optimizer& source) {
  for (std::size_t g = 0; g < optimizer.param_groups().size() && g < source.param_groups().size();
       ++g) {
    optimizer.param_groups()[g].set_options(source.param_groups()[g].options().clone());
  }
}

/// The base class a Cloneable module names to pass its name to Module.
/// Example: `MyImpl::MyImpl() : tnt::compat::NamedModuleBase<MyImpl>("my") {}`.
#if TORCH_VERSION_MAJOR >= 2
template <typename Derived>
using NamedModuleBase = torch::nn::Cloneable<Derived>;
#else
template <typename Derived>
using NamedModuleBase = torch::nn::Module;
#endif

/// Whether autocast is on for `device` (kCUDA or kCPU) on this thread.
inline bool autocast_enabled(c10::DeviceType device) {
#if TORCH_VERSION_MAJOR >= 2
  return at::autocast::is_autocast_enabled(device);
#else
  return device == c10::DeviceType::CUDA ? at::autocast::is_enabled()
                                         : at::autocast::is_cpu_enabled();
#endif
}

inline void set_autocast_enabled(c10::DeviceType device, bool enabled) {
#if TORCH_VERSION_MAJOR >= 2
  at::autocast::set_autocast_enabled(device, enabled);
#else
  if (device == c10::DeviceType::CUDA) {
    at::autocast::set_enabled(enabled);
  } else {
    at::autocast::set_cpu_enabled(enabled);
  }
#endif
}

/// The dtype autocast casts to on `device`.
inline c10::ScalarType autocast_dtype(c10::DeviceType device) {
#if TORCH_VERSION_MAJOR >= 2
  return at::autocast::get_autocast_dtype(device);
#else
  return device == c10::DeviceType::CUDA ? at::autocast::get_autocast_gpu_dtype()
                                         : at::autocast::get_autocast_cpu_dtype();
#endif
}

inline void set_autocast_dtype(c10::DeviceType device, c10::ScalarType dtype) {
#if TORCH_VERSION_MAJOR >= 2
  at::autocast::set_autocast_dtype(device, dtype);
#else
  if (device == c10::DeviceType::CUDA) {
    at::autocast::set_autocast_gpu_dtype(dtype);
  } else {
    at::autocast::set_autocast_cpu_dtype(dtype);
  }
#endif
}

/// Whether event_elapsed_ms measures (LibTorch 2.x); 1.13 has no timing.
#if TORCH_VERSION_MAJOR >= 2
inline constexpr bool kEventTiming = true;
#else
inline constexpr bool kEventTiming = false;
#endif

/// Milliseconds from `from` to `to`, both recorded with timing and
/// completed; 0 where kEventTiming is false.
inline double event_elapsed_ms([[maybe_unused]] const c10::Event& from,
                               [[maybe_unused]] const c10::Event& to) {
#if TORCH_VERSION_MAJOR >= 2
  return from.elapsedTime(to);
#else
  return 0;
#endif
}

}  // namespace tnt::compat
