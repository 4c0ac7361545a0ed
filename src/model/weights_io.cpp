// Weight files in the format of Python's torch.save(dict_of_tensors): a zip
// archive with a pickled dict, written by torch_save_bytes (io/torch_save.h:
// torch::pickle_save without type tags), which Python's torch.load reads,
// also with weights_only=True (torch 2.6+); load_torch_save_file (io/torch_save.h) reads
// what torch.save writes, including the OrderedDict of model.state_dict(),
// and refuses a damaged or crafted file with a tnt::Error that names it.
// Every entry is checked before any is copied. Writes go to a temporary
// name in the same directory and are renamed into place, so a crash never
// leaves a half-written file where a good one was.
#include <cstdio>
#include <fstream>
#include <cstring>
#include <set>
#include <vector>

#include <unistd.h>

#include <fmt/format.h>

#include <tarantella/base/error.h>
#include <tarantella/runtime/runtime.h>

#include "io/atomic_file.h"
#include "io/pickle_rewrite.h"
#include "io/torch_save.h"
#include "model/model_impl.h"

namespace tnt {
namespace {

NamedTensorList all_weights(const Model& model) {
  NamedTensorList all = model.named_parameters();
  for (auto& b : model.named_buffers()) all.push_back(b);
  return all;
}

}  // namespace

void Model::save_weights(const std::string& path, bool all_ranks) const {
  auto write = [&] {
    c10::Dict<std::string, torch::Tensor> dict;
    for (const auto& [name, t] : all_weights(*this)) dict.insert(name, t.detach().cpu().contiguous());
    write_atomically(path, torch_save_bytes(dict));
  };
  if (all_ranks) {
    write();
    impl_->engine->group().barrier();
    return;
  }
  run_on_master_checked(impl_->engine->group(), write);  // no rank returns before the file is complete
}

// Checks every entry before it copies any, so a bad file leaves the model as
// it was.
void copy_weights(Model& model, const c10::impl::GenericDict& dict, const std::string& path) {
  const NamedTensorList targets = all_weights(model);
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
    TNT_CHECK(used.count(item.key().toStringRef()) == 1, "weight file '", path, "' has an entry '",
              item.key().toStringRef(),
              "' that the model does not have: it was saved from a different model");
  }
  torch::NoGradGuard no_grad;
  for (std::size_t i = 0; i < targets.size(); ++i) targets[i].second.copy_(sources[i]);
}

void Model::load_weights(const std::string& path) {
  run_on_master_checked(impl_->engine->group(), [&] {
    const torch::IValue value = load_torch_save_file(path);
    TNT_CHECK(value.isGenericDict(), "'", path, "' holds ", detail::kind_of(value),
              ", not a dict of tensors (save with torch.save(model.state_dict(), path))");
    copy_weights(*this, value.toGenericDict(), path);
  });
  impl_->engine->synchronize_state();
}

}  // namespace tnt
