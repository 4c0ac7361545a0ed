// Reading and writing JPEG and PNG images with Debian's libjpeg-turbo and
// libpng, without LibTorch. The image sources (images.h) turn the pixels
// into tensors; tools and tests write images with write_image.
//
// Decoding can shrink a large JPEG inside the decoder (DCT scaling by M/8,
// M = 1..8), which is much cheaper than decoding full size and resizing.
// A damaged file is an error, never a silently grey image: libjpeg's
// "corrupt data" and "premature end" warnings are treated as errors.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace tnt::data {

/// An 8-bit RGB image, rows top to bottom, pixels interleaved (HWC).
///
/// Example:
///   tnt::data::RgbImage img{2, 1, {255, 0, 0, 0, 0, 255}};   // red, blue
struct RgbImage {
  int width = 0;
  int height = 0;
  std::vector<std::uint8_t> pixels;  // width * height * 3
};

/// Decodes JPEG or PNG bytes (told apart by their first bytes, not a name)
/// into RGB; grayscale, palette and alpha images are converted (alpha is
/// dropped onto black). A JPEG whose shorter side exceeds `min_short_side`
/// (> 0) is decoded at the smallest scale M/8 that keeps the shorter side at
/// least `min_short_side`. `name` (a path, or "shard.tar:member") is only
/// used in error messages. Throws tnt::Error naming it and the reason.
///
/// Example:
///   auto img = tnt::data::decode_image(bytes.data(), bytes.size(), "a.jpg",
///   /*min_short_side=*/256);
RgbImage decode_image(const std::uint8_t* data, std::size_t size, const std::string& name,
                      int min_short_side = 0);

/// Reads and decodes the file at `path` (see decode_image).
/// Example: auto img = tnt::data::read_image("train/cat/1.jpg");
RgbImage read_image(const std::string& path, int min_short_side = 0);

/// The bytes of a file; a tnt::Error naming the path when it cannot be read.
/// Example: auto bytes = tnt::data::read_file_bytes("train/cat/1.jpg");
std::vector<std::uint8_t> read_file_bytes(const std::string& path);

/// Writes `image` as PNG (lossless) or JPEG (`quality` 1-100), chosen by the
/// extension of `path` (.png, .jpg, .jpeg, any case).
/// Example: tnt::data::write_image("out/0.png", img);
void write_image(const std::string& path, const RgbImage& image, int quality = 90);

}  // namespace tnt::data
