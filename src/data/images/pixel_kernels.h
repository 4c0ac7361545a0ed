// Private: the per-pixel loops (compiled with -O3: GCC's -O2 leaves them
// scalar) behind the image transforms (transforms.cpp):
//
// * Pillow's resampling of uint8 images, bit for bit (see resize_uint8);
// * "flip a uint8 image, to_float(), normalize()" as one table lookup per
//   pixel. For a uint8 value v, to_float and normalize give
//   ((float(v) / 255) - mean[c]) / std[c], a function of (c, v) alone: the
//   256 values per channel are computed once, by the same LibTorch ops on a
//   [C, 1, 256] tensor (IEEE division and subtraction are correctly rounded,
//   so an element's result does not depend on the tensor it sits in).
#pragma once

#include <torch/types.h>

namespace tnt::data::detail {

/// Interleaved RGB rows (HWC) as a uint8 [3, H, W] tensor (LibTorch's
/// copy of the permuted view measured about 3x slower for 500x375).
torch::Tensor planar_rgb(const std::uint8_t* hwc, std::int64_t height, std::int64_t width);

/// Pillow's antialiased bilinear resize of a uint8 [C, H, W] view (any
/// strides) to [C, height, width]: PIL.Image.resize((width, height),
/// BILINEAR) bit for bit, which is what torchvision's Resize and
/// RandomResizedCrop compute on PIL images.
torch::Tensor resize_uint8(const torch::Tensor& image, std::int64_t height, std::int64_t width);

/// normalize(to_float(v)) for v = 0..255 per channel: float [C, 256].
torch::Tensor normalized_levels(const torch::Tensor& mean, const torch::Tensor& std);

/// levels[c][image[c][y][x']] with x' = flip ? W-1-x : x, for a uint8
/// [C, H, W] image (any strides): float [C, H, W].
torch::Tensor lookup_levels(const torch::Tensor& image, const torch::Tensor& levels, bool flip);

}  // namespace tnt::data::detail
