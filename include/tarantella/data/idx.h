// The IDX file format of MNIST and Fashion-MNIST: a big-endian header
// (two zero bytes, a type code, the number of dimensions, one 32-bit size per
// dimension) followed by the values. Files may be gzip-compressed.
#pragma once

#include <string>

#include <torch/types.h>

namespace tnt::data {

/// Reads an IDX file (raw or .gz) into a tensor of the file's shape and dtype
/// (uint8, int8, int16, int32, float32 or float64). A missing, truncated or
/// malformed file is a tnt::Error that names the file and what is wrong.
///
/// Example:
///   torch::Tensor labels = tnt::data::read_idx("train-labels-idx1-ubyte.gz");  // uint8 [60000]
torch::Tensor read_idx(const std::string& path);

}  // namespace tnt::data
