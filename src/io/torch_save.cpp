#include "io/torch_save.h"

#include <cstring>
#include <fstream>

#include <caffe2/serialize/inline_container.h>
#include <fmt/format.h>
#include <torch/csrc/jit/serialization/unpickler.h>

#include <tarantella/base/error.h>

#include "io/pickle_rewrite.h"

namespace tnt {
namespace {

// What torch::pickle_load does for a zip archive, with the pickle made
// digestible first (see pickle_rewrite.h).
c10::IValue load_torch_save(const std::string& path) {
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

}  // namespace

c10::IValue load_torch_save_file(const std::string& path) {
  TNT_CHECK(std::ifstream(path).good(), "cannot open '", path, "': check the path");
  try {
    return load_torch_save(path);
  } catch (const std::exception& e) {
    throw Error(fmt::format("'{}' is not a readable torch.save file (truncated or corrupt?): {}",
                            path, std::string(e.what()).substr(0, 300)));
  }
}

}  // namespace tnt
