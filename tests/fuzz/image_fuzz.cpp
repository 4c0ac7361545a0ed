// libFuzzer target: the JPEG (libjpeg-turbo) and PNG (libpng) decoding of
// the image sources. Any input decodes or raises tnt::Error, at full size
// and DCT-scaled.
#include <tarantella/base/error.h>
#include <tarantella/data/image_io.h>

#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  for (int short_side : {0, 3}) {
    try {
      const auto image = tnt::data::decode_image(data, size, "fuzz", short_side);
      if (image.pixels.size() != static_cast<std::size_t>(image.width) * image.height * 3) {
        __builtin_trap();
      }
    } catch (const tnt::Error&) {
    }
  }
  return 0;
}
