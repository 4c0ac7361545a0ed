// A small, learnable image folder in the ImageNet layout for tests and first
// runs. Listing and decoding such folders is the library's
// (tnt::data::from_image_folder, <tarantella/data/images.h>).
#pragma once

#include <cstdint>
#include <string>

namespace resnet_example {

/// Writes a small, learnable image folder for tests and first runs:
/// <dir>/train and <dir>/val, `num_classes` sub-folders each, with
/// `images_per_class` (train) and half as many (val, at least 1) images per
/// class of varying sizes around 48x40, alternately PNG and JPEG. Each class
/// has its own colour and stripe direction under pixel noise.
void make_image_folder(const std::string& dir, int num_classes, int images_per_class,
                       std::uint64_t seed);

}  // namespace resnet_example
