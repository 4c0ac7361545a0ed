// Type erasure for the wrapped network: tnt::Model trains anything that can
// list its parameters and buffers and run forward — a C++ torch::nn::Module
// (holder or shared_ptr) with forward(x), forward(x, y), forward(x, y, z) or
// forward(std::vector<Tensor>), or a TorchScript module (torchscript.h).
#pragma once

#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <torch/nn/cloneable.h>
#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>

#include <tarantella/runtime/error.h>

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
  virtual void to(const torch::Device& device) = 0;
  virtual std::string type_name() const = 0;
  /// Child modules by name (for summary and the BatchNorm check).
  virtual std::vector<std::pair<std::string, std::string>> named_module_types() = 0;
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
};

namespace detail {

template <typename M, typename... Args>
using forward_result_t = decltype(std::declval<M&>().forward(std::declval<Args>()...));
template <typename M, typename = void, typename... Args>
struct has_forward : std::false_type {};
template <typename M, typename... Args>
struct has_forward<M, std::void_t<forward_result_t<M, Args...>>, Args...> : std::true_type {};

template <typename M, typename = void>
struct has_config_json : std::false_type {};
template <typename M>
struct has_config_json<M, std::void_t<decltype(std::declval<const M&>().config_json())>>
    : std::true_type {};

NamedTensorList to_list(const torch::OrderedDict<std::string, torch::Tensor>& dict);
std::vector<std::pair<std::string, std::string>> module_types(torch::nn::Module& module);

/// Adapter for C++ modules; dispatches on the number of inputs.
template <typename M>
class NnModuleAdapter : public ModuleAdapter {
 public:
  explicit NnModuleAdapter(std::shared_ptr<M> module) : module_(std::move(module)) {}

  torch::Tensor forward(const std::vector<torch::Tensor>& in) override {
    using T = torch::Tensor;
    if constexpr (has_forward<M, void, const std::vector<T>&>::value) {
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
  void to(const torch::Device& device) override { module_->to(device); }
  std::string type_name() const override { return module_->name(); }
  std::vector<std::pair<std::string, std::string>> named_module_types() override {
    return module_types(*module_);
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
/// Wraps a TorchScript module (see torchscript.h).
std::shared_ptr<ModuleAdapter> make_adapter(const torch::jit::Module& module);

}  // namespace tnt
