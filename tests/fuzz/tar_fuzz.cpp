// libFuzzer target: the tar header walker behind the image shards. Any input
// is listed or raises tnt::Error; every member it reports lies inside the
// input, and memory follows the input, not a header's claim.
#include <tarantella/base/error.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <sstream>

#include "data/formats/tar.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::istringstream in(std::string(reinterpret_cast<const char*>(data), size));
  try {
    for (const auto& m : tnt::data::detail::list_tar(in, size, "fuzz.tar")) {
      if (m.offset + m.size > size) std::abort();  // a member outside the file
    }
  } catch (const tnt::Error&) {
  }
  return 0;
}
