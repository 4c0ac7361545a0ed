// The IDX reader (idx.h). zlib reads gzip and uncompressed files alike. Every
// way a file can be wrong (missing, not gzip-decodable, bad magic number,
// unknown type, truncated, longer than its header says) is a tnt::Error that
// names the file.
#include <tarantella/data/idx.h>

#include <zlib.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <memory>
#include <vector>

#include <torch/torch.h>

#include <tarantella/base/error.h>

namespace tnt::data {
namespace {

struct GzCloser {
  void operator()(gzFile_s* f) const { gzclose(f); }
};
using GzFile = std::unique_ptr<gzFile_s, GzCloser>;

// Reads up to `bytes` bytes; returns how many were read (errors throw).
std::size_t read_some(gzFile f, void* out, std::size_t bytes, const std::string& path) {
  std::size_t done = 0;
  auto* p = static_cast<unsigned char*>(out);
  while (done < bytes) {
    const auto chunk = static_cast<unsigned>(std::min<std::size_t>(bytes - done, 1u << 30));
    const int got = gzread(f, p + done, chunk);
    if (got < 0) {
      int code = 0;
      const char* message = gzerror(f, &code);
      TNT_CHECK(false, "IDX file ", path, " cannot be read: ", message,
                " (a damaged gzip file? download or reinstall it)");
    }
    if (got == 0) break;
    done += static_cast<std::size_t>(got);
  }
  return done;
}

struct IdxType {
  torch::Dtype dtype;
  std::size_t bytes;
};

IdxType type_of(unsigned code, const std::string& path) {
  switch (code) {
    case 0x08:
      return {torch::kUInt8, 1};
    case 0x09:
      return {torch::kInt8, 1};
    case 0x0B:
      return {torch::kInt16, 2};
    case 0x0C:
      return {torch::kInt32, 4};
    case 0x0D:
      return {torch::kFloat32, 4};
    case 0x0E:
      return {torch::kFloat64, 8};
    default:
      break;
  }
  TNT_CHECK(false, "IDX file ", path, " has unknown type code 0x", std::hex, code,
            ": expected 0x08 (uint8), 0x09 (int8), 0x0B (int16), 0x0C (int32), 0x0D (float32) ",
            "or 0x0E (float64); is it an IDX file?");
  return {};
}

// IDX values are big-endian.
void to_host_order(torch::Tensor& t, std::size_t element_bytes) {
  const std::uint16_t probe = 1;
  const bool big_endian_host = *reinterpret_cast<const unsigned char*>(&probe) == 0;
  if (element_bytes == 1 || big_endian_host) return;
  auto* p = static_cast<unsigned char*>(t.data_ptr());
  const auto n = static_cast<std::size_t>(t.numel());
  for (std::size_t i = 0; i < n; ++i)
    std::reverse(p + i * element_bytes, p + (i + 1) * element_bytes);
}

}  // namespace

torch::Tensor read_idx(const std::string& path) {
  errno = 0;
  GzFile file(gzopen(path.c_str(), "rb"));
  TNT_CHECK(file != nullptr, "IDX file ", path,
            " cannot be opened: ", errno ? std::strerror(errno) : "out of memory",
            ": check the path");
  std::array<unsigned char, 4> magic{};
  TNT_CHECK(read_some(file.get(), magic.data(), 4, path) == 4, "IDX file ", path,
            " is truncated: it ends inside its 4-byte header");
  TNT_CHECK(magic[0] == 0 && magic[1] == 0, "IDX file ", path,
            " has a wrong magic number (first bytes ", static_cast<int>(magic[0]), " ",
            static_cast<int>(magic[1]),
            "): an IDX file starts with two zero bytes; is it an IDX file?");
  const IdxType type = type_of(magic[2], path);
  const unsigned dims = magic[3];
  TNT_CHECK(dims >= 1, "IDX file ", path, " declares 0 dimensions: expected at least 1");

  std::vector<unsigned char> raw(4 * dims);
  TNT_CHECK(read_some(file.get(), raw.data(), raw.size(), path) == raw.size(), "IDX file ", path,
            " is truncated: it ends inside the sizes of its ", dims, " dimensions");
  std::vector<std::int64_t> shape(dims);
  std::size_t count = 1;
  for (unsigned d = 0; d < dims; ++d) {
    const unsigned char* b = &raw[4 * d];
    shape[d] = (std::int64_t{b[0]} << 24) | (b[1] << 16) | (b[2] << 8) | b[3];
    TNT_CHECK(shape[d] == 0 || count <= (std::size_t{1} << 40) / static_cast<std::size_t>(shape[d]),
              "IDX file ", path, " declares an impossible size (dimension ", d, " = ", shape[d],
              "): the header is damaged");
    count *= static_cast<std::size_t>(shape[d]);
  }

  // Memory follows the data that actually arrives, not the header's claim: a
  // damaged header declaring a terabyte over a small file is found truncated
  // after reading the file, without allocating the terabyte first (the
  // uncompressed size of a gzip file is not known before reading it).
  const std::size_t bytes = count * type.bytes;
  auto data = std::make_unique<std::vector<unsigned char>>();
  constexpr std::size_t kChunk = std::size_t{64} << 20;
  std::size_t got = 0;
  while (got < bytes) {
    const std::size_t want = std::min(kChunk, bytes - got);
    data->resize(got + want);
    const std::size_t n = read_some(file.get(), data->data() + got, want, path);
    got += n;
    if (n < want) break;
  }
  data->resize(got);
  TNT_CHECK(got == bytes, "IDX file ", path, " is truncated: its header declares shape ",
            c10::IntArrayRef(shape), " (", bytes, " bytes of data) but only ", got,
            " bytes follow");
  const auto options = torch::TensorOptions().dtype(type.dtype);
  torch::Tensor out;
  if (bytes == 0) {
    // from_blob never calls the deleter of a null data pointer.
    out = torch::empty(shape, options);
  } else {
    auto* owner = data.release();
    out = torch::from_blob(owner->data(), shape, [owner](void*) { delete owner; }, options);
  }
  unsigned char extra = 0;
  TNT_CHECK(read_some(file.get(), &extra, 1, path) == 0, "IDX file ", path,
            " is longer than its header declares (shape ", out.sizes(),
            "): wrong dimensions in the header, or two files joined");
  to_host_order(out, type.bytes);
  return out;
}

}  // namespace tnt::data
