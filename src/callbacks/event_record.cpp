#include "callbacks/event_record.h"

#include <array>

namespace tnt::callbacks::detail {
namespace {

// Reflected Castagnoli polynomial.
constexpr std::uint32_t kPolynomial = 0x82F63B78u;
// TensorFlow's kMaskDelta.
constexpr std::uint32_t kMaskDelta = 0xA282EAD8u;

// One table of 256 entries: the CRC of each byte value. A byte-at-a-time
// CRC is plenty for a few hundred bytes per epoch.
constexpr std::array<std::uint32_t, 256> make_table() {
  std::array<std::uint32_t, 256> table{};
  for (std::uint32_t i = 0; i < 256; ++i) {
    std::uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1u) ? (c >> 1) ^ kPolynomial : c >> 1;
    table[i] = c;
  }
  return table;
}

constexpr std::array<std::uint32_t, 256> kTable = make_table();

void append_le(std::string& out, std::uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((value >> (8 * i)) & 0xFFu));
}

}  // namespace

std::uint32_t crc32c(std::string_view data) {
  std::uint32_t crc = 0xFFFFFFFFu;
  for (const char ch : data) {
    crc = kTable[(crc ^ static_cast<unsigned char>(ch)) & 0xFFu] ^ (crc >> 8);
  }
  return ~crc;
}

std::uint32_t mask_crc(std::uint32_t crc) { return ((crc >> 15) | (crc << 17)) + kMaskDelta; }

std::string frame_record(std::string_view data) {
  std::string header;
  append_le(header, data.size(), 8);
  std::string out = header;
  out.reserve(8 + 4 + data.size() + 4);
  append_le(out, mask_crc(crc32c(header)), 4);
  out.append(data);
  append_le(out, mask_crc(crc32c(data)), 4);
  return out;
}

}  // namespace tnt::callbacks::detail
