#include <tarantella/model/torchscript.h>

#include <sstream>

#include <torch/script.h>

#include <tarantella/base/error.h>

namespace tnt {
namespace {

NamedTensorList to_list(const torch::jit::named_parameter_list& items) {
  NamedTensorList out;
  for (const auto& item : items) out.emplace_back(item.name, item.value);
  return out;
}

NamedTensorList to_list(const torch::jit::named_buffer_list& items) {
  NamedTensorList out;
  for (const auto& item : items) out.emplace_back(item.name, item.value);
  return out;
}

class TorchScriptAdapter : public ModuleAdapter {
 public:
  explicit TorchScriptAdapter(torch::jit::Module module) : module_(std::move(module)) {}

  torch::Tensor forward(const std::vector<torch::Tensor>& inputs) override {
    std::vector<torch::jit::IValue> args(inputs.begin(), inputs.end());
    const torch::jit::IValue out = module_.forward(args);
    TNT_CHECK(out.isTensor(), "the TorchScript model's forward returned a ", out.tagKind(),
              ": tnt::Model needs a single output tensor");
    return out.toTensor();
  }
  NamedTensorList named_parameters() override { return to_list(module_.named_parameters()); }
  NamedTensorList named_buffers() override { return to_list(module_.named_buffers()); }
  void train(bool on) override { module_.train(on); }
  std::function<void()> keep_modes() override {
    std::vector<std::pair<torch::jit::Module, bool>> modes;
    modes.emplace_back(module_, module_.is_training());
    for (const auto& m : module_.modules()) modes.emplace_back(m, m.is_training());
    return [modes]() mutable {
      for (auto& [m, on] : modes) m.train(on);
    };
  }
  void to(const torch::Device& device) override { module_.to(device); }
  std::string type_name() const override {
    return module_.type()->name() ? module_.type()->name()->name() : "TorchScript module";
  }
  std::vector<std::pair<std::string, std::string>> named_module_types() override {
    std::vector<std::pair<std::string, std::string>> out;
    for (const auto& item : module_.named_modules()) {
      const auto name = item.value.type()->name();
      out.emplace_back(item.name, name ? name->name() : "?");
    }
    return out;
  }
  std::string torchscript_bytes() const override {
    std::ostringstream out;
    module_.save(out);
    return out.str();
  }
  std::shared_ptr<ModuleAdapter> clone() const override {
    return std::make_shared<TorchScriptAdapter>(module_.deepcopy());
  }

 private:
  torch::jit::Module module_;
};

}  // namespace

std::shared_ptr<ModuleAdapter> make_adapter(const torch::jit::Module& module) {
  return std::make_shared<TorchScriptAdapter>(module);
}

Model load_torchscript(const std::string& path) {
  torch::jit::Module module;
  try {
    module = torch::jit::load(path, torch::Device(torch::kCPU));  // the Model moves it to its device
  } catch (const std::exception& e) {
    throw Error(detail::concat("cannot load TorchScript model '", path, "': ",
                               std::string(e.what()).substr(0, 300),
                               " (save it in Python with torch.jit.script(net).save(path))"));
  }
  return Model(make_adapter(module));
}

}  // namespace tnt
