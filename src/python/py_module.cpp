// PyModule: a Python torch.nn.Module as the engine's network (py_module.h).
// Every call into the module takes the GIL; the engine's loops run with it
// released. Parameters and buffers are the module's own tensors, shared
// without copies, so the optimizer and the gradient hooks work on them
// directly.
#include "python/py_module.h"

#include <string>
#include <utility>
#include <vector>

#include <tarantella/base/error.h>

#include "python/py_collective.h"
#include "python/py_object.h"

namespace tnt::python {
namespace {

// A Python torch.nn.Module as the engine's network.
class PyModule final : public ModuleAdapter {
 public:
  explicit PyModule(py::object module) : module_(share_object(std::move(module))) {}

  torch::Tensor forward(const std::vector<torch::Tensor>& inputs) override {
    py::gil_scoped_acquire gil;
    py::tuple args(inputs.size());
    for (std::size_t i = 0; i < inputs.size(); ++i) args[i] = py::cast(inputs[i]);
    const py::object out = (*module_)(*args);
    TNT_CHECK(THPVariable_Check(out.ptr()), "the model's forward returned a ",
              type_name_of(out), ", tnt.Model needs one torch.Tensor: return the output tensor "
              "(a model with several outputs can return torch.cat or a stacked tensor)");
    return out.cast<torch::Tensor>();
  }
  NamedTensorList named_parameters() override { return named("named_parameters"); }
  NamedTensorList named_buffers() override { return named("named_buffers"); }
  void train(bool on) override {
    py::gil_scoped_acquire gil;
    module_->attr("train")(on);
  }
  void to(const torch::Device& device) override {
    py::gil_scoped_acquire gil;
    module_->attr("to")(device.str());
  }
  std::string type_name() const override {
    py::gil_scoped_acquire gil;
    return type_name_of(*module_);
  }
  // The C++ cores of the module's collective layers (py_collective.h): the
  // engine gives them the model's group and, because they exist, runs
  // forward and backward on empty micro-batches too.
  std::vector<std::shared_ptr<torch::nn::Module>> modules() override {
    py::gil_scoped_acquire gil;
    return collective_layers_of(*module_);
  }
  std::vector<std::pair<std::string, std::string>> named_module_types() override {
    py::gil_scoped_acquire gil;
    std::vector<std::pair<std::string, std::string>> out;
    for (const py::handle item : module_->attr("named_modules")()) {
      const auto pair = item.cast<py::tuple>();
      out.emplace_back(pair[0].cast<std::string>(), type_name_of(pair[1]));
    }
    return out;
  }
  std::shared_ptr<ModuleAdapter> clone() const override {
    py::gil_scoped_acquire gil;
    return std::make_shared<PyModule>(py::module_::import("copy").attr("deepcopy")(*module_));
  }

 private:
  NamedTensorList named(const char* method) {
    py::gil_scoped_acquire gil;
    NamedTensorList out;
    for (const py::handle item : module_->attr(method)()) {
      const auto pair = item.cast<py::tuple>();
      out.emplace_back(pair[0].cast<std::string>(), pair[1].cast<torch::Tensor>());
    }
    return out;
  }
  SharedPyObject module_;
};

}  // namespace

std::shared_ptr<ModuleAdapter> module_adapter(py::object module) {
  return std::make_shared<PyModule>(std::move(module));
}

}  // namespace tnt::python
