// The random-access node behind every image source (files, tar shards): a
// sample is decoded only when asked for, a request for many indices (one
// micro-batch) is decoded on the source's own worker threads.
#pragma once

#include <tarantella/data/images.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "data/node.h"

namespace tnt::data::detail {

/// How a source reaches its samples.
struct ImageSamples {
  std::string name;                              // for describe(), e.g. "images(1000)"
  std::vector<std::int64_t> labels;              // one per sample
  std::function<RgbImage(std::int64_t)> decode;  // sample i's pixels; thread-safe
  ImageOptions options;
};

/// Throws for num_workers < 1 or a negative decode_short_side.
void check_image_options(const ImageOptions& options);

/// Elements {uint8 [3, H, W], int64 label}.
NodePtr make_image_samples(ImageSamples samples);

}  // namespace tnt::data::detail
