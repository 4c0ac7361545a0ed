// How a micro-batch travels through the batch-level nodes above it: as an
// Element whose last tensor is an int64 scalar holding the size of its global
// batch. DistributedDataset::Iterator removes it again; a map after batch
// applies the user's function to the other tensors only.
#pragma once

#include <cstdint>

#include <tarantella/data/dataset.h>

namespace tnt::data::detail {

/// Appends the global batch size to a micro-batch.
void attach_global_size(Element& micro_batch, std::int64_t global_size);
/// Removes and returns the global batch size of a micro-batch.
std::int64_t detach_global_size(Element& micro_batch);
/// `fn` applied to a micro-batch without its global-size tensor.
MapFunction on_micro_batch(MapFunction fn);

}  // namespace tnt::data::detail
