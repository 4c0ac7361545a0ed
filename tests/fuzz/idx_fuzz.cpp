// libFuzzer target: the IDX reader (raw and gzip). Any file is read or
// raises tnt::Error; memory follows the file's content, not its header's
// claim (run with -rss_limit_mb to enforce it).
#include <cstddef>
#include <cstdint>

#include <tarantella/base/error.h>
#include <tarantella/data/idx.h>

#include "file_reader_fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  // Gzip input when it starts like gzip, so both paths are reached.
  const bool gz = size >= 2 && data[0] == 0x1f && data[1] == 0x8b;
  const std::string path = fuzz_input_file(data, size, gz ? ".gz" : ".idx");
  try {
    (void)tnt::data::read_idx(path);
  } catch (const tnt::Error&) {
  }
  return 0;
}
