// Weight files in the format of Python's torch.save(dict_of_tensors): a zip
// archive with a pickled dict, written with torch::pickle_save, which
// Python's torch.load reads; torch::pickle_load reads what torch.save writes,
// including the OrderedDict of model.state_dict(). Writes go to a temporary
// name in the same directory and are renamed into place, so a crash never
// leaves a half-written file where a good one was.
#include <cstdio>
#include <fstream>
#include <cstring>
#include <set>

#include <unistd.h>

#include <fmt/format.h>

#include <tarantella/base/error.h>
#include <tarantella/runtime/runtime.h>

#include "io/atomic_file.h"
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
    write_atomically(path, torch::pickle_save(dict));
  };
  if (all_ranks) {
    write();
    impl_->group.barrier();
    return;
  }
  run_on_master_checked(impl_->group, write);  // no rank returns before the file is complete
}


void copy_weights(Model& model, const c10::impl::GenericDict& dict, const std::string& path) {
  std::set<std::string> used;
  torch::NoGradGuard no_grad;
  for (auto& [name, t] : all_weights(model)) {
    auto it = dict.find(name);
    TNT_CHECK(it != dict.end(), "weight file '", path, "' has no entry '", name,
              "' (the model's tensors are named as in named_parameters())");
    TNT_CHECK(it->value().isTensor(), "entry '", name, "' of '", path, "' is not a tensor");
    const torch::Tensor source = it->value().toTensor();
    TNT_CHECK(source.sizes() == t.sizes(), "entry '", name, "' of '", path, "' has shape ",
              source.sizes(), " but the model's is ", t.sizes());
    t.copy_(source);
    used.insert(name);
  }
  for (const auto& item : dict) {
    const std::string key = item.key().isString() ? item.key().toStringRef() : "?";
    TNT_CHECK(used.count(key) == 1, "weight file '", path, "' has an entry '", key,
              "' that the model does not have: it was saved from a different model");
  }
}

void Model::load_weights(const std::string& path) {
  run_on_master_checked(impl_->group, [&] {
    const torch::IValue value = load_torch_save_file(path);
    TNT_CHECK(value.isGenericDict(), "'", path, "' holds a ", value.tagKind(),
              ", not a dict of tensors (save with torch.save(model.state_dict(), path))");
    copy_weights(*this, value.toGenericDict(), path);
  });
  impl_->synchronize_state();
}

}  // namespace tnt
