// Reading and writing JPEG and PNG files with Debian's libjpeg-turbo and
// libpng, without LibTorch: the example's data pipeline turns the pixels into
// tensors. Decoding can shrink large JPEGs by 2, 4 or 8 inside the decoder
// (DCT scaling), which is much cheaper than decoding full size and resizing.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace resnet_example {

/// An 8-bit RGB image, rows top to bottom, pixels interleaved (HWC).
struct RgbImage {
  int width = 0;
  int height = 0;
  std::vector<std::uint8_t> pixels;  // width * height * 3
};

/// Decodes a JPEG or PNG file (told apart by its first bytes, not its name)
/// into RGB; grayscale, palette and alpha images are converted. A JPEG whose
/// shorter side is at least 2, 4 or 8 times `min_short_side` is decoded at
/// that reduced scale (0: always full size). Throws std::runtime_error naming
/// the file on anything unreadable.
RgbImage decode_image(const std::string& path, int min_short_side = 0);

/// Writes `image` as PNG (lossless) or JPEG (`quality` 1-100), chosen by the
/// extension of `path` (.png, .jpg, .jpeg).
void write_image(const std::string& path, const RgbImage& image, int quality = 90);

}  // namespace resnet_example
