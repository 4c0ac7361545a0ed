// libFuzzer target: the torch.save reader (zip archive + our strict pickle
// reader, src/io). The first byte picks the mode: odd, the rest is the whole
// file; even, the rest is the pickle (data.pkl) of an otherwise valid archive
// with one 64-byte storage record "0", so the pickle reader gets the mutations.
// Any input is read or raises tnt::Error; a crash, a sanitizer report, a
// LibTorch assertion or unbounded memory is a bug.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include <caffe2/serialize/inline_container.h>

#include <tarantella/base/error.h>

#include "file_reader_fuzz.h"
#include "io/torch_save.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  std::string path;
  if (data[0] & 1) {
    path = fuzz_input_file(data + 1, size - 1, ".pt");
  } else {
    path = fuzz_input_file(nullptr, 0, ".pt");
    caffe2::serialize::PyTorchStreamWriter writer(path);
    writer.writeRecord("data.pkl", data + 1, size - 1);
    const std::vector<char> storage(64, 1);
    writer.writeRecord("data/0", storage.data(), storage.size());
    writer.writeEndOfFile();
  }
  try {
    (void)tnt::load_torch_save_file(path);
  } catch (const tnt::Error&) {
  }
  return 0;
}
