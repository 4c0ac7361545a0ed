// Factories of the pipeline nodes. Each node class lives in its own .cpp
// file; Dataset (dataset.cpp) and distribution only see these functions.
#pragma once

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include <tarantella/data/dataset.h>

#include "data/pipeline/node.h"

namespace tnt::data::detail {

class Batcher;

// sources.cpp
NodePtr make_tensor_slices(Element tensors);
NodePtr make_tensors(Element tensors);
NodePtr make_range(std::int64_t start, std::int64_t stop, std::int64_t step);
NodePtr make_generator(GeneratorFunction generator, std::int64_t size);

// one file each
NodePtr make_map(NodePtr input, MapFunction fn, const MapOptions& options);
NodePtr make_seeded_map(NodePtr input, SeededMapFunction fn, std::optional<std::uint64_t> seed,
                        const MapOptions& options);
NodePtr make_filter(NodePtr input, FilterPredicate predicate);
NodePtr make_shuffle(NodePtr input, std::int64_t buffer_size, std::optional<std::uint64_t> seed,
                     bool reshuffle);
NodePtr make_batch(NodePtr input, std::shared_ptr<const Batcher> batcher);
NodePtr make_unbatch(NodePtr input);
NodePtr make_repeat(NodePtr input, std::int64_t count);
NodePtr make_take(NodePtr input, std::int64_t count);
NodePtr make_skip(NodePtr input, std::int64_t count);
NodePtr make_shard(NodePtr input, std::int64_t num_shards, std::int64_t index);
NodePtr make_zip(std::vector<NodePtr> inputs);
NodePtr make_concatenate(NodePtr first, NodePtr second);
NodePtr make_enumerate(NodePtr input, std::int64_t start);
NodePtr make_cache(NodePtr input);
/// `pin`: page-locked read-ahead: the thread pins what it hands on (dense),
/// and makes pin.device its current device (base/threads.h, adopt_device).
NodePtr make_prefetch(NodePtr input, std::int64_t buffer_size, Pinning pin = {});
/// The micro-batch rule (public as tnt::data::micro_batch_range): rank
/// `rank`'s rows [lo, hi) of a batch of `batch` samples over `size` ranks.
std::pair<std::int64_t, std::int64_t> share_range(std::int64_t batch, int size, int rank,
                                                  std::int64_t granularity);
/// Rank spec.rank's micro-batches of the batches `batcher` would form.
NodePtr make_micro_batch(NodePtr input, std::shared_ptr<const Batcher> batcher,
                         const SplitSpec& spec);

}  // namespace tnt::data::detail
