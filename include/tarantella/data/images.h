// Image sources: a folder in the ImageNet layout (one sub-folder per class)
// or an explicit list of files with labels. Elements are
// {image uint8 [3, H, W], label int64 []}, H and W those of the file (or of
// its DCT-scaled decode, see ImageOptions::decode_short_side).
//
// Listing reads names only. A file is read and decoded when its element is
// asked for, on the thread (and rank) that asks: under distribute(), each
// rank opens and decodes only its own samples of every global batch. Batch
// the images after making them one size (transforms.h), e.g.
//
//   auto train = tnt::data::from_image_folder("train", tnt::data::ImageOptions().num_workers(4))
//                    .shuffle(1 << 20, /*seed=*/42)
//                    .map_seeded(tnt::data::transforms::compose({
//                        tnt::data::transforms::random_resized_crop(224),
//                        tnt::data::transforms::random_horizontal_flip(),
//                        tnt::data::transforms::to_float(),
//                        tnt::data::transforms::normalize(imagenet_mean, imagenet_std)}))
//                    .batch(256);
#pragma once

#include <tarantella/data/dataset.h>
#include <tarantella/data/image_io.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace tnt::data {

/// Image files and their labels, in a fixed order.
///
/// Example:
///   tnt::data::ImageList list{{"cat", "dog"}, {"a.jpg", "b.png"}, {0, 1}};
struct ImageList {
  std::vector<std::string> classes;  // class names; label i is classes[i]
  std::vector<std::string> paths;
  std::vector<std::int64_t> labels;
};

/// Lists the .jpg/.jpeg/.png files (any case) of `dir`'s class sub-folders,
/// sorted by class, then file name: the same on every rank. The label is the
/// position of the sub-folder's name in sorted order. With `classes` given
/// (e.g. the training folder's), every sub-folder must be one of them and
/// keeps its label, so a validation folder may lack a class. Errors name the
/// folder: missing, not a directory, no images.
///
/// Example: auto list = tnt::data::list_image_folder("imagenet/train");
ImageList list_image_folder(const std::string& dir, const std::vector<std::string>& classes = {});

/// What an image source does with a sample whose file (or tar member) cannot
/// be read or decoded.
enum class OnBadSample {
  raise,  ///< an error naming the file and the decoder's reason (default)
  skip,   ///< drop the sample: one warning naming the file and the reason
};

/// How image sources read their files.
///
/// Example:
///   tnt::data::ImageOptions().num_workers(4).decode_short_side(256)
///   tnt::data::ImageOptions().on_error(tnt::data::OnBadSample::skip)
class ImageOptions {
 public:
  /// Threads (the caller's included) that read and decode the images of one
  /// request, e.g. one micro-batch. Default 1.
  ImageOptions& num_workers(int n) {
    num_workers_ = n;
    return *this;
  }
  /// > 0: decode a JPEG at the smallest DCT scale M/8 that keeps its shorter
  /// side at least this long (cheap shrinking for resize + center crop).
  /// 0 (default): full size. Leave it 0 for random_resized_crop, which
  /// crops before it shrinks.
  ImageOptions& decode_short_side(int pixels) {
    decode_short_side_ = pixels;
    return *this;
  }
  /// Counts the images this process decoded (for tests and reports).
  ImageOptions& decoded_counter(std::shared_ptr<std::atomic<std::int64_t>> counter) {
    counter_ = std::move(counter);
    return *this;
  }
  /// raise (default): a bad sample is an error. skip: it is dropped from
  /// its batch (the batch has fewer rows; a batch of bad samples only is
  /// left out), with one warning per bad sample; training weights each step
  /// by the samples that remain and reports the count per epoch.
  /// Dataset-level faults (a missing shard, a stale index, a bad tar header)
  /// stay errors.
  ImageOptions& on_error(OnBadSample policy) {
    on_error_ = policy;
    return *this;
  }
  /// Counts the samples this process skipped (for tests and reports); the
  /// source keeps its own count otherwise (Dataset::samples_skipped()).
  ImageOptions& skipped_counter(std::shared_ptr<std::atomic<std::int64_t>> counter) {
    skipped_ = std::move(counter);
    return *this;
  }
  int num_workers() const { return num_workers_; }
  int decode_short_side() const { return decode_short_side_; }
  const std::shared_ptr<std::atomic<std::int64_t>>& decoded_counter() const { return counter_; }
  OnBadSample on_error() const { return on_error_; }
  const std::shared_ptr<std::atomic<std::int64_t>>& skipped_counter() const { return skipped_; }

 private:
  int num_workers_ = 1;
  int decode_short_side_ = 0;
  std::shared_ptr<std::atomic<std::int64_t>> counter_;
  OnBadSample on_error_ = OnBadSample::raise;
  std::shared_ptr<std::atomic<std::int64_t>> skipped_;
};

/// The images of list_image_folder(dir, classes):
/// {uint8 [3, H, W], int64 label}.
/// Example: auto ds = tnt::data::from_image_folder("imagenet/train");
Dataset from_image_folder(const std::string& dir, const ImageOptions& options = ImageOptions(),
                          const std::vector<std::string>& classes = {});

/// The images of an explicit list: element i is {paths[i] decoded, labels[i]}.
/// Example: auto ds = tnt::data::from_image_files({{}, {"a.jpg", "b.png"}, {3, 5}});
Dataset from_image_files(const ImageList& list, const ImageOptions& options = ImageOptions());

/// An RGB image as a uint8 [3, H, W] tensor (a copy).
/// Example: torch::Tensor chw = tnt::data::image_to_tensor(tnt::data::read_image("a.png"));
torch::Tensor image_to_tensor(const RgbImage& image);

}  // namespace tnt::data
