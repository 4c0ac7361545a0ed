// PyModule: a Python torch.nn.Module as the engine's network (py_module.h).
// Every call into the module takes the GIL; the engine's loops run with it
// released. Parameters and buffers are the module's own tensors, shared
// without copies, so the optimizer and the gradient hooks work on them
// directly.
#include "python/py_module.h"

#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include <tarantella/base/error.h>
#include <tarantella/base/logging.h>

#include "python/py_collective.h"
#include "python/py_object.h"
#include "stages/partition.h"

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
  // A plain torch.nn.Sequential (not a subclass, whose forward may differ),
  // child after child as Sequential.forward runs them.
  torch::Tensor forward_by_layer(const std::vector<torch::Tensor>& inputs,
                                 std::vector<LayerOutput>& kept) override {
    if (inputs.size() != 1) return {};
    py::gil_scoped_acquire gil;
    const py::module_ nn = py::module_::import("torch.nn");
    if (!module_->get_type().is(nn.attr("Sequential"))) return {};
    std::vector<py::object> children;
    std::vector<std::vector<torch::Tensor>> parameters;
    std::unordered_set<const void*> seen;
    for (const py::handle child : *module_) {
      children.push_back(py::reinterpret_borrow<py::object>(child));
      parameters.emplace_back();
      for (const py::handle p : child.attr("parameters")()) {
        parameters.back().push_back(p.cast<torch::Tensor>());
        if (!seen.insert(parameters.back().back().unsafeGetTensorImpl()).second) return {};
      }
    }
    if (children.empty()) return {};
    kept.clear();
    std::vector<torch::Tensor> pending;
    py::object value = py::cast(inputs[0]);
    for (std::size_t i = 0; i < children.size(); ++i) {
      value = children[i](value);
      pending.insert(pending.end(), parameters[i].begin(), parameters[i].end());
      if (THPVariable_Check(value.ptr())) {
        kept.push_back({value.cast<torch::Tensor>(), std::exchange(pending, {})});
      }
    }
    TNT_CHECK(THPVariable_Check(value.ptr()), "the model's forward returned a ",
              type_name_of(value), ", tnt.Model needs one torch.Tensor: return the output tensor "
              "(a model with several outputs can return torch.cat or a stacked tensor)");
    return value.cast<torch::Tensor>();
  }
  NamedTensorList named_parameters() override { return named("named_parameters"); }
  NamedTensorList named_buffers() override { return named("named_buffers"); }
  void train(bool on) override {
    py::gil_scoped_acquire gil;
    module_->attr("train")(on);
  }
  std::function<void()> keep_modes() override {
    py::gil_scoped_acquire gil;
    py::list modes;
    for (const py::handle m : module_->attr("modules")()) {
      modes.append(py::make_tuple(m, m.attr("training")));
    }
    // The whole module's train() first (an override may do more than set
    // flags), then the flags of the modules set apart, directly (train()
    // would set their children too).
    return [kept = share_object(std::move(modes))] {
      py::gil_scoped_acquire again;
      bool first = true;
      for (const py::handle item : *kept) {
        const auto pair = item.cast<py::tuple>();
        if (first) {
          pair[0].attr("train")(pair[1]);
          first = false;
        } else if (pair[0].attr("training").cast<bool>() != pair[1].cast<bool>()) {
          pair[0].attr("training") = pair[1];
        }
      }
    };
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

py::object stage_of(const py::object& module, const stages::StageLayout& layout, bool master) {
  const py::module_ nn = py::module_::import("torch.nn");
  if (!py::isinstance(module, nn.attr("Sequential"))) {
    throw py::type_error(detail::concat(
        "tnt.Model(..., pipeline_stages=", layout.stages, ") cuts a torch.nn.Sequential into "
        "stages, got a ", py::str(module.get_type().attr("__name__")).cast<std::string>(),
        ": write the network as a torch.nn.Sequential of its blocks, with tnt.nn.SplitPoint() "
        "where a stage ends (or none: it is then cut by parameter count)"));
  }
  const py::object split_point_type = py::module_::import("tarantella.nn").attr("SplitPoint");
  std::vector<std::pair<std::string, py::object>> children;
  std::vector<bool> split_point;
  std::vector<std::int64_t> parameters;
  for (const py::handle item : module.attr("named_children")()) {
    const auto pair = item.cast<py::tuple>();
    const py::object child = pair[1];
    children.emplace_back(pair[0].cast<std::string>(), child);
    split_point.push_back(py::isinstance(child, split_point_type));
    std::int64_t n = 0;
    for (const py::handle p : child.attr("parameters")()) n += p.attr("numel")().cast<std::int64_t>();
    parameters.push_back(n);
  }
  std::vector<std::int64_t> per_stage;
  const auto ranges = stages::stage_ranges(split_point, parameters, layout.stages, &per_stage);
  if (master) log::info(stages::describe_cut(ranges, per_stage, split_point));
  const auto [begin, end] = ranges[static_cast<std::size_t>(layout.stage)];
  const py::object ordered = py::module_::import("collections").attr("OrderedDict")();
  const py::object torch = py::module_::import("torch");
  for (int i = 0; i < static_cast<int>(children.size()); ++i) {
    const auto& [name, child] = children[static_cast<std::size_t>(i)];
    if (i >= begin && i < end) {
      if (!split_point[static_cast<std::size_t>(i)]) ordered[py::str(name)] = child;
      continue;
    }
    // Another stage's layer: its tensors are freed (the structure stays).
    const py::object no_grad = torch.attr("no_grad")();
    no_grad.attr("__enter__")();
    for (const py::handle t : child.attr("parameters")()) {
      t.attr("data") = torch.attr("empty")(0, py::arg("dtype") = t.attr("dtype"),
                                          py::arg("device") = t.attr("device"));
    }
    for (const py::handle t : child.attr("buffers")()) {
      t.attr("data") = torch.attr("empty")(0, py::arg("dtype") = t.attr("dtype"),
                                          py::arg("device") = t.attr("device"));
    }
    no_grad.attr("__exit__")(py::none(), py::none(), py::none());
  }
  return nn.attr("Sequential")(ordered);
}

}  // namespace tnt::python
