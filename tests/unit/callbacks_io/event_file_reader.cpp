#include "event_file_reader.h"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace tnt_test {
namespace {

std::uint64_t read_le(const std::string& bytes, std::size_t at, int n) {
  std::uint64_t v = 0;
  for (int i = 0; i < n; ++i) {
    v |= static_cast<std::uint64_t>(static_cast<unsigned char>(bytes[at + i])) << (8 * i);
  }
  return v;
}

// Minimal protobuf wire-format cursor.
class Wire {
 public:
  explicit Wire(std::string_view b) : b_(b) {}
  bool done() const { return at_ >= b_.size(); }
  std::uint64_t varint() {
    std::uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      need(1);
      const auto byte = static_cast<unsigned char>(b_[at_++]);
      v |= static_cast<std::uint64_t>(byte & 0x7F) << shift;
      if ((byte & 0x80) == 0) return v;
    }
    throw std::runtime_error("protobuf: varint longer than 10 bytes");
  }
  std::string_view bytes(std::size_t n) {
    need(n);
    std::string_view out = b_.substr(at_, n);
    at_ += n;
    return out;
  }
  std::string_view length_delimited() { return bytes(static_cast<std::size_t>(varint())); }
  void skip(int wire_type) {
    switch (wire_type) {
      case 0:
        varint();
        break;
      case 1:
        bytes(8);
        break;
      case 2:
        length_delimited();
        break;
      case 5:
        bytes(4);
        break;
      default:
        throw std::runtime_error("protobuf: unsupported wire type " + std::to_string(wire_type));
    }
  }

 private:
  void need(std::size_t n) const {
    if (at_ + n > b_.size()) throw std::runtime_error("protobuf: message truncated");
  }
  std::string_view b_;
  std::size_t at_ = 0;
};

template <typename T>
T bits_as(std::string_view raw) {
  static_assert(sizeof(T) == 4 || sizeof(T) == 8);
  std::uint64_t v = 0;
  for (std::size_t i = 0; i < sizeof(T); ++i) {
    v |= static_cast<std::uint64_t>(static_cast<unsigned char>(raw[i])) << (8 * i);
  }
  T out;
  if constexpr (sizeof(T) == 4) {
    const auto v32 = static_cast<std::uint32_t>(v);
    std::memcpy(&out, &v32, 4);
  } else {
    std::memcpy(&out, &v, 8);
  }
  return out;
}

// Summary.Value: tag = 1 (string), simple_value = 2 (float).
std::optional<ScalarValue> decode_value(std::string_view bytes) {
  Wire w(bytes);
  ScalarValue value;
  bool has_simple_value = false;
  while (!w.done()) {
    const std::uint64_t key = w.varint();
    const int field = static_cast<int>(key >> 3), type = static_cast<int>(key & 7);
    if (field == 1 && type == 2) {
      value.tag = std::string(w.length_delimited());
    } else if (field == 2 && type == 5) {
      value.value = bits_as<float>(w.bytes(4));
      has_simple_value = true;
    } else {
      w.skip(type);
    }
  }
  if (!has_simple_value) return std::nullopt;
  return value;
}

}  // namespace

std::uint32_t crc32c_bitwise(std::string_view data) {
  std::uint32_t crc = 0xFFFFFFFFu;
  for (const char ch : data) {
    crc ^= static_cast<unsigned char>(ch);
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0x82F63B78u & (0u - (crc & 1u)));
  }
  return crc ^ 0xFFFFFFFFu;
}

std::uint32_t masked(std::uint32_t crc) { return ((crc >> 15) | (crc << 17)) + 0xA282EAD8u; }

std::vector<std::string> read_records(const std::string& bytes, const std::string& what) {
  std::vector<std::string> records;
  std::size_t at = 0;
  while (at < bytes.size()) {
    const std::string where = what + " record " + std::to_string(records.size());
    if (bytes.size() - at < 12) throw std::runtime_error(where + ": truncated header");
    const std::uint64_t length = read_le(bytes, at, 8);
    const auto length_crc = static_cast<std::uint32_t>(read_le(bytes, at + 8, 4));
    if (masked(crc32c_bitwise(std::string_view(bytes).substr(at, 8))) != length_crc) {
      throw std::runtime_error(where + ": CRC of the length does not match");
    }
    if (bytes.size() - at - 12 < length + 4) throw std::runtime_error(where + ": truncated data");
    std::string data = bytes.substr(at + 12, length);
    const auto data_crc = static_cast<std::uint32_t>(read_le(bytes, at + 12 + length, 4));
    if (masked(crc32c_bitwise(data)) != data_crc) {
      throw std::runtime_error(where + ": CRC of the data does not match");
    }
    records.push_back(std::move(data));
    at += 12 + length + 4;
  }
  return records;
}

// Event: wall_time = 1 (double), step = 2 (int64), file_version = 3
// (string), summary = 5 (Summary: repeated Value value = 1).
DecodedEvent decode_event(std::string_view bytes) {
  Wire w(bytes);
  DecodedEvent event;
  while (!w.done()) {
    const std::uint64_t key = w.varint();
    const int field = static_cast<int>(key >> 3), type = static_cast<int>(key & 7);
    if (field == 1 && type == 1) {
      event.wall_time = bits_as<double>(w.bytes(8));
    } else if (field == 2 && type == 0) {
      event.step = static_cast<std::int64_t>(w.varint());
    } else if (field == 3 && type == 2) {
      event.file_version = std::string(w.length_delimited());
    } else if (field == 5 && type == 2) {
      Wire summary(w.length_delimited());
      while (!summary.done()) {
        const std::uint64_t k = summary.varint();
        if ((k >> 3) == 1 && (k & 7) == 2) {
          if (auto v = decode_value(summary.length_delimited())) event.scalars.push_back(*v);
        } else {
          summary.skip(static_cast<int>(k & 7));
        }
      }
    } else {
      w.skip(type);
    }
  }
  return event;
}

std::vector<DecodedEvent> read_event_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + path.string());
  std::ostringstream content;
  content << in.rdbuf();
  std::vector<DecodedEvent> events;
  for (const std::string& record : read_records(content.str(), path.string())) {
    events.push_back(decode_event(record));
  }
  return events;
}

std::vector<std::filesystem::path> event_files(const std::filesystem::path& dir) {
  std::vector<std::filesystem::path> files;
  if (!std::filesystem::is_directory(dir)) return files;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.is_regular_file() &&
        entry.path().filename().string().find("tfevents") != std::string::npos) {
      files.push_back(entry.path());
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

ScalarSeries scalar_series(const std::vector<DecodedEvent>& events) {
  ScalarSeries series;
  for (const DecodedEvent& e : events) {
    for (const ScalarValue& v : e.scalars) series[v.tag].emplace_back(e.step, v.value);
  }
  return series;
}

}  // namespace tnt_test
