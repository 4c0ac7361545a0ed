// JPEG (libjpeg-turbo) and PNG (libpng) codecs behind image_io.h. libjpeg
// reports errors through a callback that must not return: the documented way
// out is longjmp back to the caller, which then throws. No C++ object with a
// destructor is created between setjmp and the libjpeg calls that may jump.
#include <tarantella/data/image_io.h>

#include <algorithm>
#include <cctype>
#include <csetjmp>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <memory>

// clang-format off: jpeglib.h needs FILE and size_t from <cstdio> first.
#include <jpeglib.h>
#include <png.h>
// clang-format on

#include <tarantella/base/error.h>

namespace tnt::data {
namespace {

constexpr const char* kDamagedFix =
    ": re-encode or replace the file, or remove it from the data set";

// A header's dimensions are taken on trust only as far as the compressed data
// could fill them: a JPEG needs at least a few bits per 16x16 block, deflate
// expands at most ~1032:1. Beyond 1024 pixels per byte (plus 1 Mpixel) the
// header is damaged, and decoding would allocate and loop over what it claims.
bool plausible_size(std::uint64_t width, std::uint64_t height, std::size_t bytes) {
  return width * height <= 1024 * static_cast<std::uint64_t>(bytes) + (1u << 20);
}

[[noreturn]] void throw_implausible_size(std::uint64_t width, std::uint64_t height,
                                         std::size_t bytes, const std::string& name) {
  TNT_CHECK(false, "image ", name, " claims ", width, "x", height, " pixels but holds only ", bytes,
            " bytes: its header is damaged", kDamagedFix);
  std::abort();  // not reached: TNT_CHECK(false) throws
}

bool ends_with_ci(const std::string& s, const std::string& suffix) {
  if (s.size() < suffix.size()) return false;
  return std::equal(suffix.begin(), suffix.end(), s.end() - suffix.size(), [](char a, char b) {
    return a == std::tolower(static_cast<unsigned char>(b));
  });
}

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

// Warnings (level -1) are corrupt or truncated data: libjpeg would go on and
// fill the rest with grey, a silently wrong sample. Treat them as errors.
void on_jpeg_message(j_common_ptr cinfo, int level) {
  if (level < 0) on_jpeg_error(cinfo);
}

void install_jpeg_errors(jpeg_common_struct* cinfo, JpegErrorManager& err) {
  cinfo->err = jpeg_std_error(&err.mgr);
  err.mgr.error_exit = on_jpeg_error;
  err.mgr.emit_message = on_jpeg_message;
}

// The smallest M (scale M/8) whose output keeps the shorter side at least
// `min_short_side`; 8 (full size) when no reduction fits.
unsigned dct_scale_num(unsigned short_side, int min_short_side) {
  if (min_short_side <= 0) return 8;
  for (unsigned m = 1; m < 8; ++m) {
    if ((short_side * m + 7) / 8 >= static_cast<unsigned>(min_short_side)) return m;
  }
  return 8;
}

void read_jpeg_rows(jpeg_decompress_struct& cinfo, RgbImage& image) {
  image.width = static_cast<int>(cinfo.output_width);
  image.height = static_cast<int>(cinfo.output_height);
  const std::size_t stride = static_cast<std::size_t>(image.width) * 3;
  image.pixels.resize(stride * static_cast<std::size_t>(image.height));
  while (cinfo.output_scanline < cinfo.output_height) {
    JSAMPROW row = image.pixels.data() + stride * cinfo.output_scanline;
    jpeg_read_scanlines(&cinfo, &row, 1);
  }
}

RgbImage decode_jpeg(const std::uint8_t* data, std::size_t size, const std::string& name,
                     int min_short_side) {
  RgbImage image;
  jpeg_decompress_struct cinfo;
  JpegErrorManager err;
  install_jpeg_errors(reinterpret_cast<jpeg_common_struct*>(&cinfo), err);
  if (setjmp(err.jump)) {
    jpeg_destroy_decompress(&cinfo);
    TNT_CHECK(false, "image ", name, " is not a readable JPEG file (libjpeg: ", err.message, ")",
              kDamagedFix);
  }
  jpeg_create_decompress(&cinfo);
  jpeg_mem_src(&cinfo, data, static_cast<unsigned long>(size));
  jpeg_read_header(&cinfo, TRUE);
  if (!plausible_size(cinfo.image_width, cinfo.image_height, size)) {
    const auto width = cinfo.image_width, height = cinfo.image_height;
    jpeg_destroy_decompress(&cinfo);
    throw_implausible_size(width, height, size, name);
  }
  cinfo.out_color_space = JCS_RGB;  // grayscale and YCbCr convert; CMYK is an error
  cinfo.scale_num = dct_scale_num(std::min(cinfo.image_width, cinfo.image_height), min_short_side);
  cinfo.scale_denom = 8;
  jpeg_start_decompress(&cinfo);
  read_jpeg_rows(cinfo, image);
  jpeg_finish_decompress(&cinfo);
  jpeg_destroy_decompress(&cinfo);
  return image;
}

RgbImage decode_png(const std::uint8_t* data, std::size_t size, const std::string& name) {
  png_image png{};
  png.version = PNG_IMAGE_VERSION;
  TNT_CHECK(png_image_begin_read_from_memory(&png, data, size), "image ", name,
            " is not a readable PNG file (libpng: ", png.message, ")", kDamagedFix);
  if (!plausible_size(png.width, png.height, size)) {
    png_image_free(&png);
    throw_implausible_size(png.width, png.height, size, name);
  }
  png.format = PNG_FORMAT_RGB;  // palette, gray and 16-bit convert; alpha composes on black
  RgbImage image;
  image.width = static_cast<int>(png.width);
  image.height = static_cast<int>(png.height);
  image.pixels.resize(PNG_IMAGE_SIZE(png));
  if (!png_image_finish_read(&png, nullptr, image.pixels.data(), 0, nullptr)) {
    const std::string message = png.message;
    png_image_free(&png);
    TNT_CHECK(false, "image ", name, " is not a readable PNG file (libpng: ", message, ")",
              kDamagedFix);
  }
  return image;
}

void write_png(const std::string& path, const RgbImage& image) {
  png_image png{};
  png.version = PNG_IMAGE_VERSION;
  png.width = static_cast<png_uint_32>(image.width);
  png.height = static_cast<png_uint_32>(image.height);
  png.format = PNG_FORMAT_RGB;
  TNT_CHECK(png_image_write_to_file(&png, path.c_str(), 0, image.pixels.data(), 0, nullptr),
            "cannot write PNG file ", path, " (libpng: ", png.message,
            "): check that the folder exists and is writable");
}

void compress_jpeg_rows(jpeg_compress_struct& cinfo, const RgbImage& image, int quality) {
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
}

void write_jpeg(const std::string& path, const RgbImage& image, int quality) {
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(std::fopen(path.c_str(), "wb"),
                                                       &std::fclose);
  TNT_CHECK(file, "cannot create JPEG file ", path,
            ": check that the folder exists and is writable");
  jpeg_compress_struct cinfo;
  JpegErrorManager err;
  install_jpeg_errors(reinterpret_cast<jpeg_common_struct*>(&cinfo), err);
  if (setjmp(err.jump)) {
    jpeg_destroy_compress(&cinfo);
    TNT_CHECK(false, "cannot write JPEG file ", path, " (libjpeg: ", err.message, ")");
  }
  jpeg_create_compress(&cinfo);
  jpeg_stdio_dest(&cinfo, file.get());
  compress_jpeg_rows(cinfo, image, quality);
  jpeg_destroy_compress(&cinfo);
}

bool is_jpeg(const std::uint8_t* data, std::size_t size) {
  return size >= 3 && data[0] == 0xFF && data[1] == 0xD8 && data[2] == 0xFF;
}

bool is_png(const std::uint8_t* data, std::size_t size) {
  static const std::uint8_t kSignature[] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
  return size >= 8 && std::equal(kSignature, kSignature + 8, data);
}

}  // namespace

RgbImage decode_image(const std::uint8_t* data, std::size_t size, const std::string& name,
                      int min_short_side) {
  if (is_jpeg(data, size)) return decode_jpeg(data, size, name, min_short_side);
  if (is_png(data, size)) return decode_png(data, size, name);
  TNT_CHECK(false, "image ", name, " (", size,
            " bytes) is neither a JPEG nor a PNG file (checked its first bytes)", kDamagedFix);
  return {};
}

std::vector<std::uint8_t> read_file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  TNT_CHECK(in, "cannot open file ", path, ": check that it exists and is readable");
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

RgbImage read_image(const std::string& path, int min_short_side) {
  const std::vector<std::uint8_t> bytes = read_file_bytes(path);
  return decode_image(bytes.data(), bytes.size(), path, min_short_side);
}

void write_image(const std::string& path, const RgbImage& image, int quality) {
  TNT_CHECK(image.width > 0 && image.height > 0 &&
                image.pixels.size() == static_cast<std::size_t>(image.width) * image.height * 3,
            "write_image(", path, "): a ", image.width, "x", image.height, " RGB image needs ",
            static_cast<std::size_t>(image.width) * image.height * 3, " bytes of pixels, got ",
            image.pixels.size());
  TNT_CHECK(quality >= 1 && quality <= 100, "write_image(", path, "): JPEG quality ", quality,
            " is out of range: use 1..100");
  if (ends_with_ci(path, ".png")) return write_png(path, image);
  if (ends_with_ci(path, ".jpg") || ends_with_ci(path, ".jpeg")) {
    return write_jpeg(path, image, quality);
  }
  TNT_CHECK(false, "write_image: ", path, " should end in .png, .jpg or .jpeg");
}

}  // namespace tnt::data
