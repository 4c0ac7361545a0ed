// A folder of images in the ImageNet layout: one sub-folder per class, the
// class index being the position of the sub-folder's name in sorted order:
//
//   train/n01440764/n01440764_10026.JPEG
//   train/n01443537/...
//
// Listing a folder reads names only, never pixels: the training pipeline
// decodes each image where it is used (after distribution, on its rank).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace resnet_example {

/// The images of a folder and their labels, in a fixed order (class, then
/// file name), identical on every rank.
struct ImageList {
  std::vector<std::string> classes;  // sub-folder names, sorted
  std::vector<std::string> paths;
  std::vector<std::int64_t> labels;  // index into classes
};

/// Lists the .jpg/.jpeg/.png files (any case) of `dir`'s class sub-folders.
/// With `classes` given (e.g. the training folder's), the sub-folders must
/// be among them and keep their labels, so a validation folder may lack a
/// class. Throws std::runtime_error naming the folder when it has no images.
ImageList list_image_folder(const std::string& dir, const std::vector<std::string>& classes = {});

/// Writes a small, learnable image folder for tests and first runs:
/// <dir>/train and <dir>/val, `num_classes` sub-folders each, with
/// `images_per_class` (train) and half as many (val, at least 1) images per
/// class of varying sizes around 48x40, alternately PNG and JPEG. Each class
/// has its own colour and stripe direction under pixel noise.
void make_image_folder(const std::string& dir, int num_classes, int images_per_class,
                       std::uint64_t seed);

}  // namespace resnet_example
