// Private: the record framing of TensorBoard event files (the TFRecord
// format). Each record is
//   uint64 length | uint32 masked_crc32c(length) | data | uint32 masked_crc32c(data)
// with integers little-endian. The CRC is CRC-32C (Castagnoli), "masked" by a
// rotation and an added constant so that a CRC computed over data that
// itself holds CRCs does not degenerate (TensorFlow's crc32c::Mask).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace tnt::callbacks::detail {

/// CRC-32C of `data` (initial value ~0, final complement: the iSCSI CRC).
std::uint32_t crc32c(std::string_view data);

/// TensorFlow's masking of a CRC stored next to the data it covers.
std::uint32_t mask_crc(std::uint32_t crc);

/// The bytes of one record around `data`.
std::string frame_record(std::string_view data);

}  // namespace tnt::callbacks::detail
