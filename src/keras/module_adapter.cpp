#include <tarantella/keras/module_adapter.h>

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
