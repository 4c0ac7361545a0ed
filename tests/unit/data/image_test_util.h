// Helpers for the image tests: a temporary folder that removes itself, and a
// small ImageNet-layout folder of generated PNG and JPEG files.
#pragma once

#include <tarantella/data/image_io.h>

#include <filesystem>
#include <random>
#include <string>

namespace tnt_test {

/// A fresh directory under the system temp folder, removed at scope end.
class TempDir {
 public:
  explicit TempDir(const std::string& tag) {
    std::random_device rd;
    path_ = std::filesystem::temp_directory_path() /
            ("tnt_" + tag + "_" + std::to_string(rd()) + std::to_string(rd()));
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string str() const { return path_.string(); }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

/// An RGB image of noise and a gradient, width x height, from `seed`.
inline tnt::data::RgbImage pattern_image(int width, int height, unsigned seed) {
  std::mt19937 rng(seed);
  tnt::data::RgbImage image{width, height, {}};
  image.pixels.resize(static_cast<std::size_t>(width) * height * 3);
  for (std::size_t i = 0; i < image.pixels.size(); ++i) {
    const auto pixel = static_cast<int>(i / 3);
    image.pixels[i] = static_cast<std::uint8_t>((pixel % width) * 4 + (rng() % 64));
  }
  return image;
}

/// <dir>/class<c>/img<i>.{png,jpg}: `classes` folders of `per_class` images
/// of sizes around 40x30, PNG and JPEG alternately. Class folders are
/// written in reverse order to show that listing sorts.
inline void write_image_folder(const std::string& dir, int classes, int per_class) {
  for (int c = classes - 1; c >= 0; --c) {
    const auto class_dir = std::filesystem::path(dir) / ("class" + std::to_string(c));
    std::filesystem::create_directories(class_dir);
    for (int i = 0; i < per_class; ++i) {
      const unsigned seed = static_cast<unsigned>(c * 100 + i);
      const auto image = pattern_image(36 + 3 * i + c, 28 + 2 * c + i % 3, seed);
      const char* ext = i % 2 == 0 ? ".png" : ".jpg";
      tnt::data::write_image((class_dir / ("img" + std::to_string(i) + ext)).string(), image);
    }
  }
}

}  // namespace tnt_test
