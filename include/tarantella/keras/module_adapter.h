// Type erasure for the wrapped network: tnt::Model trains anything that can
// list its parameters and buffers and run forward — a C++ torch::nn::Module
// (holder, shared_ptr or plain value) with forward(x), forward(x, y),
// forward(x, y, z) or forward(std::vector<Tensor>), or a TorchScript module
// (torchscript.h).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <torch/nn/cloneable.h>
#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>

#include <tarantella/base/error.h>
#include <tarantella/keras/layer_output.h>

namespace torch::jit {
struct Module;
}

namespace tnt {

using NamedTensorList = std::vector<std::pair<std::string, torch::Tensor>>;

/// What tnt::Model needs from a network.
class ModuleAdapter {
 public:
  virtual ~ModuleAdapter() = default;
  virtual torch::Tensor forward(const std::vector<torch::Tensor>& inputs) = 0;
  virtual NamedTensorList named_parameters() = 0;
  virtual NamedTensorList named_buffers() = 0;
  virtual void train(bool on) = 0;
  /// The training mode of the network and of every module in it, set back
  /// by the function returned: fit, evaluate and predict leave the modes as
  /// they found them. None where the adapter cannot tell.
  virtual std::function<void()> keep_modes() { return {}; }
  virtual void to(const torch::Device& device) = 0;
  virtual std::string type_name() const = 0;
  /// Child modules by name (for summary and the BatchNorm check).
  virtual std::vector<std::pair<std::string, std::string>> named_module_types() = 0;
  /// The C++ modules of the network, itself first; empty for TorchScript.
  /// tnt::Model gives its process group to those that communicate
  /// (tnt::nn::SyncBatchNorm).
  virtual std::vector<std::shared_ptr<torch::nn::Module>> modules() { return {}; }
  /// The architecture as JSON ({"class_name": "Sequential", "config": ...})
  /// for networks that can describe themselves (tnt::layers::Sequential, or
  /// any module with `std::string config_json() const`); empty otherwise.
  virtual std::string config_json() const { return {}; }
  /// A TorchScript module's serialized bytes (torch::jit::Module::save);
  /// empty for C++ modules.
  virtual std::string torchscript_bytes() const { return {}; }
  /// A deep copy: same architecture, weights copied (LibTorch's clone()).
  /// Throws an Error naming the reason where the network cannot be copied.
  virtual std::shared_ptr<ModuleAdapter> clone() const = 0;

  /// Where the network is a chain of layers, each taking the output of the
  /// one before (a plain Sequential's children, C++ or Python, one input):
  /// forward() layer by layer, keeping every layer's tensor output in
  /// `kept`, in order. Undefined (and nothing run) where it is not such a
  /// chain, or where two layers share a parameter: then only forward()
  /// runs it. A pipeline stage uses the kept outputs to send its input's
  /// gradient before it computes its weights' gradients.
  virtual torch::Tensor forward_by_layer(const std::vector<torch::Tensor>& inputs,
                                         std::vector<LayerOutput>& kept) {
    (void)inputs;
    (void)kept;
    return {};
  }
};

namespace detail {

template <typename M, typename... Args>
using forward_result_t = decltype(std::declval<M&>().forward(std::declval<Args>()...));
template <typename M, typename = void, typename... Args>
struct has_forward : std::false_type {};
template <typename M, typename... Args>
struct has_forward<M, std::void_t<forward_result_t<M, Args...>>, Args...> : std::true_type {};

// A forward() that is a variadic template (torch::nn::Sequential's) compiles
// for any argument, a vector of tensors included, and fails at run time:
// such modules get the tensors one by one.
struct NotAModuleInput {};
template <typename M>
constexpr bool forward_takes_anything_v = has_forward<M, void, NotAModuleInput>::value;

template <typename M, typename = void>
struct has_config_json : std::false_type {};
template <typename M>
struct has_config_json<M, std::void_t<decltype(std::declval<const M&>().config_json())>>
    : std::true_type {};

NamedTensorList to_list(const torch::OrderedDict<std::string, torch::Tensor>& dict);
std::vector<std::pair<std::string, std::string>> module_types(torch::nn::Module& module);
/// ModuleAdapter::forward_by_layer for a torch::nn::Sequential `module`
/// (undefined for any other module).
torch::Tensor forward_sequential_by_layer(torch::nn::Module& module,
                                          const std::vector<torch::Tensor>& inputs,
                                          std::vector<LayerOutput>& kept);

/// Adapter for C++ modules; dispatches on the number of inputs.
template <typename M>
class NnModuleAdapter : public ModuleAdapter {
 public:
  explicit NnModuleAdapter(std::shared_ptr<M> module) : module_(std::move(module)) {}

  torch::Tensor forward(const std::vector<torch::Tensor>& in) override {
    using T = torch::Tensor;
    if constexpr (has_forward<M, void, const std::vector<T>&>::value &&
                  !forward_takes_anything_v<M>) {
      return module_->forward(in);
    } else {
      const auto n = in.size();
      if constexpr (has_forward<M, void, T>::value) {
        if (n == 1) return module_->forward(in[0]);
      }
      if constexpr (has_forward<M, void, T, T>::value) {
        if (n == 2) return module_->forward(in[0], in[1]);
      }
      if constexpr (has_forward<M, void, T, T, T>::value) {
        if (n == 3) return module_->forward(in[0], in[1], in[2]);
      }
      TNT_CHECK(false, "the model's forward() does not take ", n,
                " tensor(s): set CompileOptions().num_inputs() to the number of inputs of "
                "forward(), and give dataset elements (inputs..., target)");
      return {};
    }
  }
  NamedTensorList named_parameters() override { return to_list(module_->named_parameters()); }
  NamedTensorList named_buffers() override { return to_list(module_->named_buffers()); }
  void train(bool on) override { module_->train(on); }
  std::function<void()> keep_modes() override {
    std::vector<std::pair<std::shared_ptr<torch::nn::Module>, bool>> modes;
    // Itself first, then its children (train() sets a module's children too).
    for (auto& m : module_->modules(/*include_self=*/true)) modes.emplace_back(m, m->is_training());
    return [modes] {
      for (const auto& [m, on] : modes) m->train(on);
    };
  }
  void to(const torch::Device& device) override { module_->to(device); }
  std::string type_name() const override { return module_->name(); }
  std::vector<std::pair<std::string, std::string>> named_module_types() override {
    return module_types(*module_);
  }
  std::vector<std::shared_ptr<torch::nn::Module>> modules() override {
    return module_->modules(/*include_self=*/true);
  }
  torch::Tensor forward_by_layer(const std::vector<torch::Tensor>& inputs,
                                 std::vector<LayerOutput>& kept) override {
    return forward_sequential_by_layer(*module_, inputs, kept);
  }
  std::string config_json() const override {
    if constexpr (has_config_json<M>::value) {
      return module_->config_json();
    } else {
      return {};
    }
  }
  std::shared_ptr<ModuleAdapter> clone() const override {
    if constexpr (std::is_base_of_v<torch::nn::Cloneable<M>, M>) {
      return std::make_shared<NnModuleAdapter<M>>(
          std::dynamic_pointer_cast<M>(module_->clone()));
    } else {
      TNT_CHECK(false, "clone_model: the module '", module_->name(),
                "' cannot be copied: LibTorch's clone() needs the module class to derive from "
                "torch::nn::Cloneable<Class> (TORCH_MODULE-style modules with a reset() that "
                "creates the parameters), or build it from tnt::layers");
      return nullptr;
    }
  }

 private:
  std::shared_ptr<M> module_;
};

template <typename T>
struct is_module_holder : std::is_base_of<torch::nn::ModuleHolder<typename T::ContainedType>, T> {};

/// A forward() that NnModuleAdapter can call.
template <typename M>
constexpr bool has_supported_forward_v =
    has_forward<M, void, const std::vector<torch::Tensor>&>::value ||
    has_forward<M, void, torch::Tensor>::value ||
    has_forward<M, void, torch::Tensor, torch::Tensor>::value ||
    has_forward<M, void, torch::Tensor, torch::Tensor, torch::Tensor>::value;

/// A module passed by value: a class derived from torch::nn::Module itself
/// (holders and shared_ptrs are not derived from it).
template <typename M>
constexpr bool is_value_module_v = std::is_base_of_v<torch::nn::Module, M>;

template <typename M>
constexpr bool dependent_false_v = false;

}  // namespace detail

/// Wraps a module holder (e.g. torch::nn::Linear, a TORCH_MODULE type) or a
/// shared_ptr to a module.
template <typename M>
std::shared_ptr<ModuleAdapter> make_adapter(std::shared_ptr<M> module) {
  return std::make_shared<detail::NnModuleAdapter<M>>(std::move(module));
}
template <typename Holder, typename = typename Holder::ContainedType>
std::shared_ptr<ModuleAdapter> make_adapter(Holder holder) {
  return make_adapter(holder.ptr());
}
/// Wraps a plain value module, as PyTorch's C++ examples write them:
///   struct Net : torch::nn::Module { ... torch::Tensor forward(torch::Tensor x); };
///   Net net;
///   tnt::Model model{net};      // or tnt::Model model{Net()}
/// The model owns its own Net object, copied (or moved) from the argument
/// into a shared_ptr (LibTorch needs modules owned by a shared_ptr).
/// What that copy shares with the caller's `net`: copying (and moving: it
/// has no move constructor) a torch::nn::Module copies the *handles* of its
/// registered parameters, buffers and submodules, and holder members such as
/// `torch::nn::Linear fc` point to the same LinearImpl, so both objects use
/// the same tensors and submodule objects. The model changes them in place
/// (optimizer steps, set_weights, loading, the broadcast from the master
/// rank, to(device) via set_data), so after fit() the caller's `net` holds
/// the trained weights, on the model's device. Not shared: the top-level
/// object's plain members and its own training flag (net.eval() still
/// switches the shared submodules). After `tnt::Model model{std::move(net)}`
/// `net`'s holder members are empty: don't use it. For an independent copy,
/// derive Net from torch::nn::Cloneable<Net> and use tnt::clone_model().
template <typename M, std::enable_if_t<detail::is_value_module_v<M> &&
                                           detail::has_supported_forward_v<M>,
                                       int> = 0>
std::shared_ptr<ModuleAdapter> make_adapter(M module) {
  return make_adapter(std::make_shared<M>(std::move(module)));
}
/// A value module without a forward() tnt::Model can call: a readable
/// error instead of a runtime one (the adapter only passes tensors).
template <typename M, std::enable_if_t<detail::is_value_module_v<M> &&
                                           !detail::has_supported_forward_v<M>,
                                       int> = 0>
std::shared_ptr<ModuleAdapter> make_adapter(M) {
  static_assert(detail::dependent_false_v<M>,
                "tnt::Model needs a torch::nn::Module (holder or value) with a forward(), a "
                "tnt::layers model or a TorchScript module: this module has no "
                "forward(Tensor), forward(Tensor, Tensor), forward(Tensor, Tensor, Tensor) or "
                "forward(const std::vector<Tensor>&)");
  return nullptr;
}
/// Wraps a TorchScript module (see torchscript.h).
std::shared_ptr<ModuleAdapter> make_adapter(const torch::jit::Module& module);

}  // namespace tnt
