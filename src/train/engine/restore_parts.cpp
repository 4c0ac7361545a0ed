#include "train/engine/restore_parts.h"

#include <vector>

#include <torch/torch.h>

#include <tarantella/base/error.h>

#include "io/pickle_rewrite.h"

namespace tnt::train {

NamedTensorList all_weights(ModuleAdapter& net) {
  NamedTensorList all = net.named_parameters();
  for (auto& b : net.named_buffers()) all.push_back(b);
  return all;
}

std::function<void()> prepare_weights(ModuleAdapter& net, const c10::impl::GenericDict& dict,
                                      const std::string& path,
                                      const std::set<std::string>& elsewhere) {
  const NamedTensorList targets = all_weights(net);
  std::vector<torch::Tensor> sources;
  std::set<std::string> used;
  for (const auto& [name, t] : targets) {
    auto it = dict.find(name);
    TNT_CHECK(it != dict.end(), "weight file '", path, "' has no entry '", name,
              "' (the model's tensors are named as in named_parameters())");
    TNT_CHECK(it->value().isTensor(), "weight file '", path, "': entry '", name, "' is ",
              detail::kind_of(it->value()), ", expected a tensor");
    const torch::Tensor source = it->value().toTensor();
    TNT_CHECK(source.sizes() == t.sizes(), "entry '", name, "' of '", path, "' has shape ",
              source.sizes(), " but the model's is ", t.sizes());
    sources.push_back(source);
    used.insert(name);
  }
  for (const auto& item : dict) {
    TNT_CHECK(item.key().isString(), "weight file '", path, "' has a key that is ",
              detail::kind_of(item.key()), ", expected a str (a tensor's name)");
    const std::string& name = item.key().toStringRef();
    TNT_CHECK(used.count(name) == 1 || elsewhere.count(name) == 1, "weight file '", path,
              "' has an entry '", name,
              "' that the model does not have: it was saved from a different model");
  }
  return [targets, sources] {
    torch::NoGradGuard no_grad;
    for (std::size_t i = 0; i < targets.size(); ++i) targets[i].second.copy_(sources[i]);
  };
}

}  // namespace tnt::train
