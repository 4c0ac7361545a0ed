// Image transformations for Dataset::map_seeded, in the spirit of
// torchvision.transforms and with its algorithms: each acts on the image,
// the first tensor of an element ([C, H, W], uint8 or floating), and passes
// the other tensors (the label) through.
//
// Reproducibility: the random ones draw only from the generator map_seeded
// hands them, seeded by (seed, epoch, position of the sample in the pass).
// A sample's augmented tensor is therefore the same at any rank count, any
// number of workers and in a resumed run, and differs between epochs.
//
// Geometric transforms keep the dtype. Resizing is bilinear and
// antialiased when shrinking: a uint8 image as Pillow resizes it, bit for
// bit (torchvision's PIL path, ImageFolder's), a float one by LibTorch's
// interpolation (torchvision's tensor path with antialias=True).
//
// Example (the Goyal et al. ImageNet recipe):
//   namespace T = tnt::data::transforms;
//   auto train = images.map_seeded(T::compose({T::random_resized_crop(224),
//                                              T::random_horizontal_flip(), T::to_float(),
//                                              T::normalize(T::kImageNetMean, T::kImageNetStd)}),
//                                  /*seed=*/42, tnt::data::MapOptions().num_workers(4));
//   auto eval = images.map_seeded(T::compose({T::resize(256), T::center_crop(224), T::to_float(),
//                                             T::normalize(T::kImageNetMean, T::kImageNetStd)}));
#pragma once

#include <tarantella/data/dataset.h>

#include <cstdint>
#include <utility>
#include <vector>

namespace tnt::data::transforms {

/// A per-sample transformation; deterministic ones ignore the generator.
/// Example: tnt::data::transforms::Transform t = tnt::data::transforms::center_crop(224);
using Transform = SeededMapFunction;

/// Channel statistics of ImageNet (RGB), for normalize().
inline const std::vector<double> kImageNetMean = {0.485, 0.456, 0.406};
inline const std::vector<double> kImageNetStd = {0.229, 0.224, 0.225};

/// The transforms applied in order, all drawing from the same generator.
/// Example: auto t = compose({resize(256), center_crop(224), to_float()});
Transform compose(std::vector<Transform> steps);

/// Scales the image so that its shorter side is `shorter_side`; the longer
/// side becomes floor(shorter_side * long / short), as torchvision.
/// Example: resize(256)
Transform resize(int shorter_side);

/// The central size x size square (offsets rounded half to even, as
/// torchvision). The image must be at least that large.
/// Example: center_crop(224)
Transform center_crop(int size);

/// Parameters of random_resized_crop.
///
/// Example: RandomResizedCropOptions(224).scale(0.25, 1.0).ratio(3.0 / 4, 4.0 / 3)
class RandomResizedCropOptions {
 public:
  explicit RandomResizedCropOptions(int size) : size_(size) {}
  /// Range of the crop's area as a fraction of the image's (default 0.08-1).
  RandomResizedCropOptions& scale(double lo, double hi) {
    scale_ = {lo, hi};
    return *this;
  }
  /// Range of the crop's aspect ratio width/height, drawn log-uniformly
  /// (default 3/4-4/3).
  RandomResizedCropOptions& ratio(double lo, double hi) {
    ratio_ = {lo, hi};
    return *this;
  }
  int size() const { return size_; }
  std::pair<double, double> scale() const { return scale_; }
  std::pair<double, double> ratio() const { return ratio_; }

 private:
  int size_;
  std::pair<double, double> scale_{0.08, 1.0};
  std::pair<double, double> ratio_{3.0 / 4.0, 4.0 / 3.0};
};

/// A crop rectangle in pixels.
/// Example: CropBox box{/*top=*/0, /*left=*/0, /*height=*/10, /*width=*/20};
struct CropBox {
  std::int64_t top = 0, left = 0, height = 0, width = 0;
};

/// torchvision's RandomResizedCrop.get_params with the same draws from
/// `generator` (10 tries, then a central crop clamped to the ratio range):
/// seeded alike, it gives the same box.
/// Example: auto box = random_resized_crop_box(375, 500, RandomResizedCropOptions(224), gen);
CropBox random_resized_crop_box(std::int64_t height, std::int64_t width,
                                const RandomResizedCropOptions& options, at::Generator& generator);

/// Crops a random_resized_crop_box and resizes it to size x size.
/// Example: random_resized_crop(RandomResizedCropOptions(224).scale(0.35, 1))
Transform random_resized_crop(const RandomResizedCropOptions& options);
/// random_resized_crop with the default scale and ratio ranges.
/// Example: random_resized_crop(224)
Transform random_resized_crop(int size);

/// Mirrors the image left-right with probability p (one draw, as torchvision).
/// Example: random_horizontal_flip(0.5)
Transform random_horizontal_flip(double p = 0.5);

/// uint8 [C, H, W] -> float32 in [0, 1] (x / 255); floating images pass.
/// Example: to_float()
Transform to_float();

/// (x - mean[c]) / std[c] per channel; the image must be float.
/// Example: normalize(kImageNetMean, kImageNetStd)
Transform normalize(std::vector<double> mean, std::vector<double> std);

}  // namespace tnt::data::transforms
