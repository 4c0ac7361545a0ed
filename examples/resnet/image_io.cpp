#include "image_io.h"

#include <jpeglib.h>
#include <png.h>

#include <algorithm>
#include <cctype>
#include <csetjmp>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <memory>
#include <stdexcept>

namespace resnet_example {
namespace {

std::vector<std::uint8_t> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open image file " + path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

bool ends_with(const std::string& s, const std::string& suffix) {
  if (s.size() < suffix.size()) return false;
  for (std::size_t i = 0; i < suffix.size(); ++i) {
    const char c = s[s.size() - suffix.size() + i];
    if (std::tolower(static_cast<unsigned char>(c)) != suffix[i]) return false;
  }
  return true;
}

// libjpeg reports errors through a callback that must not return; the
// documented way out is longjmp back to the caller, which then throws. No
// C++ object is created between setjmp and the libjpeg calls that may jump.
struct JpegErrorManager {
  jpeg_error_mgr mgr;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

[[noreturn]] void on_jpeg_error(j_common_ptr cinfo) {
  auto* err = reinterpret_cast<JpegErrorManager*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, err->message);
  std::longjmp(err->jump, 1);
}

// The largest libjpeg scale 1/d (d in 8, 4, 2) that keeps the shorter side
// at least `min_short_side`, else 1.
unsigned dct_scale_denominator(unsigned short_side, int min_short_side) {
  if (min_short_side <= 0) return 1;
  for (unsigned d : {8u, 4u, 2u}) {
    if ((short_side + d - 1) / d >= static_cast<unsigned>(min_short_side)) return d;
  }
  return 1;
}

RgbImage decode_jpeg(const std::vector<std::uint8_t>& bytes, const std::string& path,
                     int min_short_side) {
  RgbImage image;
  jpeg_decompress_struct cinfo;
  JpegErrorManager err;
  cinfo.err = jpeg_std_error(&err.mgr);
  err.mgr.error_exit = on_jpeg_error;
  if (setjmp(err.jump)) {
    jpeg_destroy_decompress(&cinfo);
    throw std::runtime_error(path + ": not a readable JPEG file (libjpeg: " + err.message + ")");
  }
  jpeg_create_decompress(&cinfo);
  jpeg_mem_src(&cinfo, bytes.data(), static_cast<unsigned long>(bytes.size()));
  jpeg_read_header(&cinfo, TRUE);
  cinfo.out_color_space = JCS_RGB;  // grayscale and YCbCr convert; CMYK is an error
  cinfo.scale_num = 1;
  cinfo.scale_denom =
      dct_scale_denominator(std::min(cinfo.image_width, cinfo.image_height), min_short_side);
  jpeg_start_decompress(&cinfo);
  image.width = static_cast<int>(cinfo.output_width);
  image.height = static_cast<int>(cinfo.output_height);
  const std::size_t stride = static_cast<std::size_t>(image.width) * 3;
  image.pixels.resize(stride * static_cast<std::size_t>(image.height));
  while (cinfo.output_scanline < cinfo.output_height) {
    JSAMPROW row = image.pixels.data() + stride * cinfo.output_scanline;
    jpeg_read_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_decompress(&cinfo);
  jpeg_destroy_decompress(&cinfo);
  return image;
}

RgbImage decode_png(const std::vector<std::uint8_t>& bytes, const std::string& path) {
  png_image png{};
  png.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_memory(&png, bytes.data(), bytes.size())) {
    throw std::runtime_error(path + ": not a readable PNG file (libpng: " + png.message + ")");
  }
  png.format = PNG_FORMAT_RGB;  // palette, gray and 16-bit convert; alpha composes on black
  RgbImage image;
  image.width = static_cast<int>(png.width);
  image.height = static_cast<int>(png.height);
  image.pixels.resize(PNG_IMAGE_SIZE(png));
  if (!png_image_finish_read(&png, nullptr, image.pixels.data(), 0, nullptr)) {
    const std::string message = png.message;
    png_image_free(&png);
    throw std::runtime_error(path + ": not a readable PNG file (libpng: " + message + ")");
  }
  return image;
}

void write_png(const std::string& path, const RgbImage& image) {
  png_image png{};
  png.version = PNG_IMAGE_VERSION;
  png.width = static_cast<png_uint_32>(image.width);
  png.height = static_cast<png_uint_32>(image.height);
  png.format = PNG_FORMAT_RGB;
  if (!png_image_write_to_file(&png, path.c_str(), 0, image.pixels.data(), 0, nullptr)) {
    throw std::runtime_error("cannot write PNG file " + path + " (libpng: " + png.message + ")");
  }
}

void write_jpeg(const std::string& path, const RgbImage& image, int quality) {
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(std::fopen(path.c_str(), "wb"),
                                                       &std::fclose);
  if (!file) throw std::runtime_error("cannot create JPEG file " + path);
  jpeg_compress_struct cinfo;
  JpegErrorManager err;
  cinfo.err = jpeg_std_error(&err.mgr);
  err.mgr.error_exit = on_jpeg_error;
  if (setjmp(err.jump)) {
    jpeg_destroy_compress(&cinfo);
    throw std::runtime_error("cannot write JPEG file " + path + " (libjpeg: " + err.message + ")");
  }
  jpeg_create_compress(&cinfo);
  jpeg_stdio_dest(&cinfo, file.get());
  cinfo.image_width = static_cast<JDIMENSION>(image.width);
  cinfo.image_height = static_cast<JDIMENSION>(image.height);
  cinfo.input_components = 3;
  cinfo.in_color_space = JCS_RGB;
  jpeg_set_defaults(&cinfo);
  jpeg_set_quality(&cinfo, quality, TRUE);
  jpeg_start_compress(&cinfo, TRUE);
  const std::size_t stride = static_cast<std::size_t>(image.width) * 3;
  while (cinfo.next_scanline < cinfo.image_height) {
    // libjpeg's API is not const-correct; it only reads the row.
    JSAMPROW row = const_cast<std::uint8_t*>(image.pixels.data()) + stride * cinfo.next_scanline;
    jpeg_write_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_compress(&cinfo);
  jpeg_destroy_compress(&cinfo);
}

}  // namespace

RgbImage decode_image(const std::string& path, int min_short_side) {
  const std::vector<std::uint8_t> bytes = read_file(path);
  if (bytes.size() >= 3 && bytes[0] == 0xFF && bytes[1] == 0xD8 && bytes[2] == 0xFF) {
    return decode_jpeg(bytes, path, min_short_side);
  }
  static const std::uint8_t kPngSignature[] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
  if (bytes.size() >= 8 && std::equal(kPngSignature, kPngSignature + 8, bytes.begin())) {
    return decode_png(bytes, path);
  }
  throw std::runtime_error(path + " is neither a JPEG nor a PNG file (checked its first bytes)");
}

void write_image(const std::string& path, const RgbImage& image, int quality) {
  if (image.pixels.size() != static_cast<std::size_t>(image.width) * image.height * 3) {
    throw std::runtime_error("write_image(" + path + "): pixel buffer does not match " +
                             std::to_string(image.width) + "x" + std::to_string(image.height) +
                             " RGB");
  }
  if (ends_with(path, ".png")) return write_png(path, image);
  if (ends_with(path, ".jpg") || ends_with(path, ".jpeg")) return write_jpeg(path, image, quality);
  throw std::runtime_error("write_image: " + path + " should end in .png, .jpg or .jpeg");
}

}  // namespace resnet_example
