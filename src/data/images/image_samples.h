// The random-access node behind every image source (files, tar shards): a
// sample is decoded only when asked for, a request for many indices (one
// micro-batch) is decoded on the source's own worker threads.
#pragma once

#include <tarantella/data/images.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "data/pipeline/node.h"

namespace tnt::data::detail {

/// The encoded bytes of one sample and its name in messages ("a.jpg",
/// "train-000000.tar:000000012.png").
struct EncodedSample {
  std::vector<std::uint8_t> bytes;
  std::string name;
};

/// How a source reaches its samples.
struct ImageSamples {
  std::string name;                  // for describe(), e.g. "images(1000)"
  std::vector<std::int64_t> labels;  // one per sample
  /// Sample i's bytes; thread-safe. Throws where they cannot be read.
  std::function<EncodedSample(std::int64_t)> read;
  /// Whether a failure of `read` is the sample's own (a file: skippable) or
  /// the dataset's (a shard that vanished or is shorter than its index:
  /// an error even with OnBadSample::skip).
  bool read_fault_is_the_samples = true;
  ImageOptions options;
};

/// Throws for num_workers < 1 or a negative decode_short_side.
void check_image_options(const ImageOptions& options);

/// Elements {uint8 [3, H, W], int64 label}; with OnBadSample::skip, a sample
/// that cannot be read or decoded is a dropped element (no tensors), with
/// one warning on the rank that read it.
NodePtr make_image_samples(ImageSamples samples);

}  // namespace tnt::data::detail
