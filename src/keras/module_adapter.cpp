#include <tarantella/keras/module_adapter.h>

#include <unordered_set>
#include <utility>

#include <torch/torch.h>

namespace tnt::detail {

NamedTensorList to_list(const torch::OrderedDict<std::string, torch::Tensor>& dict) {
  NamedTensorList out;
  for (const auto& item : dict) out.emplace_back(item.key(), item.value());
  return out;
}

std::vector<std::pair<std::string, std::string>> module_types(torch::nn::Module& module) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& item : module.named_modules()) out.emplace_back(item.key(), item.value()->name());
  return out;
}

}  // namespace tnt::detail

namespace tnt::detail {

// As torch::nn::SequentialImpl::forward runs its children (AnyValue from
// one to the next), keeping each tensor output.
torch::Tensor forward_sequential_by_layer(torch::nn::Module& module,
                                          const std::vector<torch::Tensor>& inputs,
                                          std::vector<LayerOutput>& kept) {
  auto* seq = dynamic_cast<torch::nn::SequentialImpl*>(&module);
  if (seq == nullptr || seq->is_empty() || inputs.size() != 1) return {};
  std::vector<std::vector<torch::Tensor>> parameters;
  std::unordered_set<const void*> seen;
  for (const torch::nn::AnyModule& child : *seq) {
    parameters.push_back(child.ptr()->parameters());
    for (const auto& p : parameters.back()) {
      if (!seen.insert(p.unsafeGetTensorImpl()).second) return {};  // shared between layers
    }
  }
  kept.clear();
  std::vector<torch::Tensor> pending;  // the parameters since the last tensor output
  torch::nn::AnyValue value(inputs[0]);
  std::size_t i = 0;
  for (auto it = seq->begin(); it != seq->end(); ++it, ++i) {
    value = i == 0 ? it->any_forward(inputs[0]) : it->any_forward(std::move(value));
    pending.insert(pending.end(), parameters[i].begin(), parameters[i].end());
    if (const auto* t = value.try_get<torch::Tensor>()) {
      kept.push_back({*t, std::exchange(pending, {})});
    }
  }
  const auto* out = value.try_get<torch::Tensor>();
  TNT_CHECK(out != nullptr, "the model's Sequential returned a ", value.type_info().name(),
            ", tnt::Model needs one torch::Tensor from its last layer");
  return *out;
}

}  // namespace tnt::detail
