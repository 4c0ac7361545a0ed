#include "image_folder.h"

#include <tarantella/data/image_io.h>

#include <algorithm>
#include <filesystem>
#include <random>

namespace resnet_example {
namespace {

namespace fs = std::filesystem;
using tnt::data::RgbImage;
using tnt::data::write_image;

// A synthetic image of class `label`: a class colour, stripes whose
// direction depends on the class, and noise, so that a small network can
// tell the classes apart after a few steps.
RgbImage class_image(int label, int num_classes, int width, int height, std::mt19937_64& rng) {
  std::uniform_int_distribution<int> noise(-40, 40);
  const double hue = static_cast<double>(label) / num_classes;
  const int base[3] = {static_cast<int>(255 * hue), static_cast<int>(255 * (1 - hue)),
                       label % 2 ? 200 : 60};
  RgbImage image{width, height, std::vector<std::uint8_t>(std::size_t(width) * height * 3)};
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      const int along = (label % 3 == 0) ? x : (label % 3 == 1) ? y : x + y;
      const int stripe = (along / 4) % 2 ? 40 : -40;
      for (int c = 0; c < 3; ++c) {
        const int v = base[c] + stripe + noise(rng);
        image.pixels[(std::size_t(y) * width + x) * 3 + c] =
            static_cast<std::uint8_t>(std::clamp(v, 0, 255));
      }
    }
  }
  return image;
}

void write_split(const fs::path& dir, int num_classes, int per_class, std::mt19937_64& rng) {
  std::uniform_int_distribution<int> jitter(-8, 8);
  for (int c = 0; c < num_classes; ++c) {
    const fs::path class_dir = dir / ("class" + std::to_string(c));
    fs::create_directories(class_dir);
    for (int i = 0; i < per_class; ++i) {
      const RgbImage image = class_image(c, num_classes, 48 + jitter(rng), 40 + jitter(rng), rng);
      const char* ext = (i % 2 == 0) ? ".png" : ".jpg";
      write_image((class_dir / ("img" + std::to_string(i) + ext)).string(), image);
    }
  }
}

}  // namespace

void make_image_folder(const std::string& dir, int num_classes, int images_per_class,
                       std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  write_split(fs::path(dir) / "train", num_classes, images_per_class, rng);
  write_split(fs::path(dir) / "val", num_classes, std::max(1, images_per_class / 2), rng);
}

}  // namespace resnet_example
