// Options of Dataset::padded_batch.
#pragma once

#include <cstdint>
#include <vector>

namespace tnt::data {

/// How Dataset::padded_batch pads the elements of one batch to a common shape.
///
/// padded_shapes has one shape per tensor of the element (without the batch
/// dimension); -1 in a dimension, or no shapes at all, means "the largest
/// size of that dimension in the batch". padding_values has one value per
/// tensor (default 0). A sample larger than a fixed padded shape is an error.
///
/// Example:
///   ds.padded_batch(32, tnt::data::PaddingOptions()
///                           .padded_shapes({{-1}, {}})   // pad tokens to the longest
///                           .padding_values({0, -1}));
class PaddingOptions {
 public:
  PaddingOptions& padded_shapes(std::vector<std::vector<std::int64_t>> shapes) {
    padded_shapes_ = std::move(shapes);
    return *this;
  }
  PaddingOptions& padding_values(std::vector<double> values) {
    padding_values_ = std::move(values);
    return *this;
  }
  PaddingOptions& drop_remainder(bool drop) {
    drop_remainder_ = drop;
    return *this;
  }
  const std::vector<std::vector<std::int64_t>>& padded_shapes() const { return padded_shapes_; }
  const std::vector<double>& padding_values() const { return padding_values_; }
  bool drop_remainder() const { return drop_remainder_; }

 private:
  std::vector<std::vector<std::int64_t>> padded_shapes_;
  std::vector<double> padding_values_;
  bool drop_remainder_ = false;
};

}  // namespace tnt::data
