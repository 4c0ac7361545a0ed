// The tutorial's inputs as tnt::data pipelines of UNBATCHED samples
// {image float32 [3, S, S] (normalized), label int64}: the caller shuffles
// and batches them with the global batch size, and tnt::Model::fit
// distributes the batches. Every per-sample step (decoding, resizing,
// generating) is a map BELOW the batch, so distribution runs it only for the
// rank's own samples of each global batch, on `workers` threads.
#pragma once

#include <tarantella/data/dataset.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace resnet_example {

/// What to load.
struct DataOptions {
  std::string source = "fashion-mnist";  // fashion-mnist | images | synthetic
  int image_size = 32;                   // S
  int workers = 2;                       // threads of each rank's map
  std::int64_t train_size = 0;           // fashion-mnist, synthetic: samples (0: default)
  std::int64_t val_size = -1;            // fashion-mnist, synthetic: samples (-1: default)
  std::string fashion_mnist_dir;         // fashion-mnist
  std::string train_dir, val_dir;        // images (val_dir optional)
  int num_classes = 1000;                // synthetic
  std::uint64_t seed = 42;               // synthetic
};

/// A training and an optional validation set, and how they came about.
struct Data {
  tnt::data::Dataset train;
  std::optional<tnt::data::Dataset> val;
  int num_classes = 0;
  std::string description;  // e.g. "Fashion-MNIST resized to 32x32, 3 channels"
  /// Images decoded on this rank so far (image folders only, else null).
  std::shared_ptr<std::atomic<std::int64_t>> decoded;
};

/// Builds the pipelines for `options.source`; throws std::invalid_argument
/// for an unknown source or missing folder.
Data load_data(const DataOptions& options);

}  // namespace resnet_example
