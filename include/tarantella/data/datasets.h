// Ready-made datasets on top of the readers.
#pragma once

#include <string>

#include <tarantella/data/dataset.h>

namespace tnt::data::datasets {

/// The default location of Debian's `dataset-fashion-mnist` package.
inline constexpr const char* kFashionMnistDir = "/usr/share/datasets/fashion-mnist";

/// Fashion-MNIST: split "train" (60000 samples) or "test" (10000). Elements
/// are {image float32 [1, 28, 28] in [0, 1], label int64 in 0..9}. Files are
/// looked up as <dir>/{train,t10k}-{images-idx3,labels-idx1}-ubyte[.gz].
/// Missing files are an error that names the directory and the Debian
/// package that provides them.
///
/// Example:
///   auto train = tnt::data::datasets::fashion_mnist("train").shuffle(60000).batch(64);
Dataset fashion_mnist(const std::string& split, const std::string& dir = kFashionMnistDir);

/// Any pair of MNIST-format IDX files (images [N, rows, cols] uint8, labels
/// [N]): {image float32 [1, rows, cols] / 255, label int64}.
///
/// Example:
///   auto ds = tnt::data::datasets::mnist_format("imgs.idx3-ubyte", "labels.idx1-ubyte");
Dataset mnist_format(const std::string& images_path, const std::string& labels_path);

}  // namespace tnt::data::datasets
