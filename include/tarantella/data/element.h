// The unit a data pipeline produces: a tuple of tensors, e.g. {image, label}.
// A batch of elements is again an element whose tensors gained a new first
// dimension (the sample index).
#pragma once

#include <cstdint>
#include <vector>

#include <torch/types.h>

namespace tnt::data {

/// One element of a Dataset: a tuple of tensors.
///
/// Example:
///   tnt::data::Element e = {torch::rand({1, 28, 28}), torch::tensor(7)};
///   torch::Tensor image = e[0], label = e[1];
using Element = std::vector<torch::Tensor>;

/// cardinality() of a dataset that never ends (e.g. after repeat()).
constexpr std::int64_t kInfiniteCardinality = -1;
/// cardinality() of a dataset whose length is only known by iterating it
/// (e.g. after filter()).
constexpr std::int64_t kUnknownCardinality = -2;

}  // namespace tnt::data
