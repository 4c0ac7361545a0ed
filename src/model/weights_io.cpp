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

#include <caffe2/serialize/inline_container.h>
#include <fmt/format.h>
#include <torch/csrc/jit/serialization/unpickler.h>

#include <tarantella/base/error.h>
#include <tarantella/runtime/runtime.h>

#include "model/model_impl.h"
#include "model/pickle_rewrite.h"

namespace tnt {

void write_atomically(const std::string& path, const std::vector<char>& bytes) {
  const std::string tmp = fmt::format("{}.tmp.{}", path, ::getpid());
  std::FILE* out = std::fopen(tmp.c_str(), "wb");
  TNT_CHECK(out != nullptr, "cannot write '", tmp,
            "': check that the directory exists and is writable");
  const bool written = std::fwrite(bytes.data(), 1, bytes.size(), out) == bytes.size() &&
                       std::fflush(out) == 0 && ::fsync(::fileno(out)) == 0;
  const bool closed = std::fclose(out) == 0;
  if (!written || !closed) {
    std::remove(tmp.c_str());
    TNT_CHECK(false, "writing '", tmp, "' failed (disk full?)");
  }
  // The data is on disk before the rename: a crash leaves the old file or
  // the new one, never a half-written one under `path`.
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    TNT_CHECK(false, "cannot rename '", tmp, "' to '", path, "'");
  }
}

namespace {

// What torch::pickle_load does for a zip archive, with the pickle made
// digestible first (see pickle_rewrite.h).
torch::IValue load_torch_save(const std::string& path) {
  caffe2::serialize::PyTorchStreamReader reader(path);
  const auto record = reader.getRecord("data.pkl");
  std::string pickle(static_cast<const char*>(std::get<0>(record).get()), std::get<1>(record));
  if (auto rewritten = detail::rewrite_ordered_dicts(pickle)) pickle = std::move(*rewritten);
  std::size_t pos = 0;
  torch::jit::Unpickler unpickler(
      [&](char* buffer, std::size_t len) -> std::size_t {
        len = std::min(len, pickle.size() - pos);
        std::memcpy(buffer, pickle.data() + pos, len);
        pos += len;
        return len;
      },
      nullptr, nullptr,
      [&](const std::string& name) { return std::get<0>(reader.getRecord("data/" + name)); },
      c10::nullopt);
  unpickler.set_version(reader.version());
  return unpickler.parse_ivalue();
}

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

torch::IValue load_torch_save_file(const std::string& path) {
  TNT_CHECK(std::ifstream(path).good(), "cannot open '", path, "': check the path");
  try {
    return load_torch_save(path);
  } catch (const std::exception& e) {
    throw Error(fmt::format("'{}' is not a readable torch.save file (truncated or corrupt?): {}",
                            path, std::string(e.what()).substr(0, 300)));
  }
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
