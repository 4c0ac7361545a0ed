// Reading torch.save-format files: a zip archive (archive/data.pkl and one
// record archive/data/<key> per storage) opened with LibTorch's
// PyTorchStreamReader, whose zip layer (miniz) checks at open that every
// stored entry lies inside the file; the pickle is then read by our strict
// reader (pickle_rewrite.h), never by LibTorch's unpickler, which trusts
// its input. Every failure becomes one tnt::Error that names the file.
#include "io/torch_save.h"

#include <fstream>
#include <tuple>

#include <c10/util/Exception.h>
#include <caffe2/serialize/inline_container.h>
#include <torch/csrc/jit/serialization/export.h>
#include <torch/csrc/jit/serialization/pickler.h>
#include <fmt/format.h>

#include <tarantella/base/error.h>

#include "io/pickle_rewrite.h"

namespace tnt {
namespace {

// What is wrong with a file that does not even start like a zip archive.
std::string not_a_zip(const std::string& head) {
  if (head.empty()) return "is empty";
  if (static_cast<unsigned char>(head[0]) == 0x80) {  // a bare pickle: PROTO
    return "is in the legacy format of torch.save before PyTorch 1.6, which is not supported: "
           "re-save it with a current torch.save";
  }
  return "is not a zip archive, so not a torch.save file";
}

c10::IValue load_torch_save(const std::string& path) {
  caffe2::serialize::PyTorchStreamReader reader(path);
  if (!reader.hasRecord("data.pkl")) {
    throw Error("the archive has no data.pkl (the pickle that torch.save writes)");
  }
  at::DataPtr data;
  std::size_t size = 0;
  std::tie(data, size) = reader.getRecord("data.pkl");
  const std::string pickle(static_cast<const char*>(data.get()), size);
  data.clear();
  return detail::read_pickle(pickle, [&](const std::string& key) {
    const std::string name = "data/" + key;
    if (!reader.hasRecord(name)) {
      throw Error(fmt::format("the archive has no record '{}' for a storage", name.substr(0, 100)));
    }
    auto record = reader.getRecord(name);
    return std::make_pair(std::move(std::get<0>(record)), std::get<1>(record));
  });
}

}  // namespace

c10::IValue load_torch_save_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  TNT_CHECK(in.good(), "cannot open '", path, "': check the path");
  std::string head(4, '\0');
  head.resize(static_cast<std::size_t>(in.read(&head[0], 4).gcount()));
  if (head != std::string("PK\x03\x04", 4)) {
    detail::throw_error(fmt::format("'{}' {}", path, not_a_zip(head)));
  }
  try {
    return load_torch_save(path);
  } catch (const Error& e) {  // ours: says what is wrong
    detail::throw_error(fmt::format("'{}' is not a valid torch.save file: {}", path, e.what()));
  } catch (const c10::Error& e) {  // the zip layer: truncated, damaged, or no zip
    detail::throw_error(
        fmt::format("'{}' is damaged (truncated?) or not a torch.save zip archive: {}", path,
                    std::string(e.what_without_backtrace()).substr(0, 300)));
  } catch (const std::exception& e) {  // e.g. std::bad_alloc
    detail::throw_error(fmt::format("'{}' could not be read as a torch.save file: {}", path,
                                    std::string(e.what()).substr(0, 300)));
  }
}

std::vector<char> torch_save_bytes(const c10::IValue& value) {
  std::vector<char> archive;
  torch_save(value, [&](const char* b, std::size_t size) { archive.insert(archive.end(), b, b + size); });
  return archive;
}

void torch_save(const c10::IValue& value,
                const std::function<void(const char*, std::size_t)>& sink) {
  // As torch::jit::pickle_save does it, with tag_aggregates off.
  std::vector<char> pickled;
  torch::jit::Pickler pickler(
      [&](const char* bytes, size_t size) { pickled.insert(pickled.end(), bytes, bytes + size); },
      /*tensor_table=*/nullptr, /*type_renamer=*/nullptr, /*memoized_class_types=*/nullptr,
      /*get_tensor_id=*/nullptr, /*tag_aggregates=*/false);
  pickler.protocol();
  pickler.pushIValue(value);
  pickler.stop();
  caffe2::serialize::PyTorchStreamWriter writer([&](const void* bytes, size_t size) {
    sink(static_cast<const char*>(bytes), size);
    return size;
  });
  torch::jit::writeArchiveAndTensors("data", pickled.data(), pickled.size(), pickler.tensorData(),
                                     writer);
  writer.writeEndOfFile();
}

}  // namespace tnt
