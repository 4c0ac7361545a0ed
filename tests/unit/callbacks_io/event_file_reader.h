// A TensorBoard event file reader written for the tests only, independent of
// the library's writer: its own bitwise CRC-32C, its own record parser and a
// hand-written protobuf wire-format decoder of tensorflow.Event (field
// numbers from TensorFlow's event.proto and summary.proto). If the writer
// and this reader agree, TensorBoard's reader (the same format) agrees too.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tnt_test {

/// CRC-32C, one bit at a time (deliberately unlike the library's table).
std::uint32_t crc32c_bitwise(std::string_view data);
/// TensorFlow's crc32c::Mask.
std::uint32_t masked(std::uint32_t crc);

/// The payloads of the records of a TFRecord stream. Throws
/// std::runtime_error naming `what` and the record on a bad CRC or a
/// truncated record.
std::vector<std::string> read_records(const std::string& bytes, const std::string& what);

struct ScalarValue {
  std::string tag;
  float value = 0;
};

struct DecodedEvent {
  double wall_time = 0;
  std::int64_t step = 0;
  std::optional<std::string> file_version;
  std::vector<ScalarValue> scalars;  // Summary.Value entries with simple_value
};

/// Decodes one serialized tensorflow.Event; throws on malformed input.
DecodedEvent decode_event(std::string_view bytes);

/// Every event of the file at `path`, in order.
std::vector<DecodedEvent> read_event_file(const std::filesystem::path& path);

/// The files in `dir` (not below) whose names contain "tfevents", sorted.
std::vector<std::filesystem::path> event_files(const std::filesystem::path& dir);

/// tag -> [(step, value)] over all scalar events, in file order.
using ScalarSeries = std::map<std::string, std::vector<std::pair<std::int64_t, float>>>;
ScalarSeries scalar_series(const std::vector<DecodedEvent>& events);

}  // namespace tnt_test
