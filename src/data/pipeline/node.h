// The internal model of a pipeline. A Dataset holds the last Node of an
// immutable chain; a pass over it is opened with a PassKey (a pure function of
// the epoch, and of the repetition below a repeat()).
//
// A node offers one or both of two ways to read a pass:
//  * Indexed: random access to element i, and `gather` of many indices
//    stacked into a batch. Offered when the node's output at position i does
//    not depend on the content of other samples (sources, map, shuffle,
//    batch, take, skip, shard, repeat, zip, concatenate, enumerate, cache).
//    Batching asks for exactly the indices it needs, so nothing else is
//    computed, and sources answer with one vectorized index_select.
//  * Stream: sequential, with `next_deferred()` handing out elements whose
//    computation is postponed (a Deferred). filter and unbatch are streams
//    only; above them, map composes deferred computations instead of running
//    them, so a consumer that forces only some samples pays only for those.
//
// Threading: a view or stream is used by one thread at a time (the consumer,
// or the prefetch thread). Only user map functions run concurrently, on the
// map's own workers, after their inputs were read on the consumer thread.
//
// Distribution: batching() tells what a node is (sample-level, a splittable
// batch, or something batch-level that cannot be split) and split() rebuilds
// the batch-level chain for one rank; see distribute.h. A micro-batch's
// global batch size travels beside its tensors, never in them: a view tells
// it for an index, a stream for the element it handed out last
// (global_size()); nodes that act on whole elements pass it on.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <tarantella/data/element.h>

#include "data/pipeline/element_ops.h"

namespace tnt::data::detail {

/// Identifies one pass over a node.
using PassKey = std::uint64_t;
/// The key of epoch `epoch` at the root of a pipeline.
PassKey epoch_key(std::int64_t epoch);
/// The key of repetition `pass` inside a pass with key `key`.
PassKey child_key(PassKey key, std::int64_t pass);
/// splitmix64: the mixing function behind keys and shuffle seeds.
std::uint64_t mix64(std::uint64_t x);

/// An element whose computation may be postponed until it is forced.
class Deferred {
 public:
  explicit Deferred(Element value) : value_(std::move(value)) {}
  explicit Deferred(std::function<Element()> compute) : compute_(std::move(compute)) {}
  /// Computes (once) and returns the element.
  Element force() const;

 private:
  mutable std::optional<Element> value_;
  std::function<Element()> compute_;
};

/// global_size() of an element that is not a micro-batch.
constexpr std::int64_t kNotSplit = -1;

/// Random access to one pass of a node.
class Indexed {
 public:
  virtual ~Indexed() = default;
  /// Number of elements: >= 0, or kInfiniteCardinality.
  virtual std::int64_t size() const = 0;
  virtual Element get(std::int64_t index) = 0;
  /// The elements at `indices`, in that order. Default: get() each.
  virtual std::vector<Element> get_many(const std::vector<std::int64_t>& indices);
  /// The elements at `indices` (at least one) stacked along a new first
  /// dimension. Default: stack(get_many()).
  virtual Element gather(const std::vector<std::int64_t>& indices);
  /// The size of the global batch that element `index` is a rank's share
  /// of (a split pipeline), else kNotSplit. Computes no element.
  virtual std::int64_t global_size(std::int64_t /*index*/) { return kNotSplit; }
};
using IndexedPtr = std::shared_ptr<Indexed>;

/// Sequential access to one pass of a node.
class Stream {
 public:
  virtual ~Stream() = default;
  /// The next element as a possibly postponed computation; nullopt at the end.
  virtual std::optional<Deferred> next_deferred() = 0;
  /// The next element, computed. Default: next_deferred() forced.
  virtual std::optional<Element> next();
  /// Passes over up to `n` elements, computing as little as it can: an
  /// indexed stream moves its position, a lazy one drops its deferred
  /// elements unforced. Returns how many it passed (fewer at the end).
  /// Default: next_deferred() n times.
  virtual std::int64_t skip(std::int64_t n);
  /// Indexed::global_size of the element the last next() or
  /// next_deferred() handed out; ask before reading on.
  virtual std::int64_t global_size() const { return kNotSplit; }
};
using StreamPtr = std::unique_ptr<Stream>;

/// A stream that computes its elements anyway (filter, batch, prefetch, ...):
/// its deferred elements are already computed.
class EagerStream : public Stream {
 public:
  std::optional<Deferred> next_deferred() final;
  std::optional<Element> next() override = 0;
};

/// Streams an Indexed view in index order.
StreamPtr stream_over(IndexedPtr view);

/// What a node is with respect to distribution.
struct Batching {
  enum class Kind {
    Samples,     // elements are samples: distribute needs micro_batch_size
    Splittable,  // batches of batch_size that split() can divide among ranks
    Blocked,     // batches, but `blocker` prevents splitting them
  };
  Kind kind = Kind::Samples;
  std::int64_t batch_size = 0;
  std::string blocker;
};

/// Page-locked read-ahead (DistributeOptions::pin_memory): whether a
/// prefetch pins what it hands on, and the GPU its thread adopts (none: the
/// thread's current device stays; base/threads.h).
struct Pinning {
  bool on = false;
  std::optional<c10::Device> device;
};

/// The rank a pipeline is split for.
struct SplitSpec {
  int rank = 0;
  int size = 1;
  /// Micro-batches are made of whole runs of this many samples of the
  /// global batch (see micro_batch_range).
  std::int64_t granularity = 1;
  /// Where a micro-batch's tensors are collated (page-locked memory for a
  /// GPU: the copy to the device then needs no second host copy); null:
  /// memory of the usual kind.
  CollateInto collate_into;
  /// pin_memory: a prefetch above the collation pins on its thread what is
  /// not pinned yet, and adopts the rank's GPU (nodes/prefetch.cpp).
  Pinning pin;
};

class Node;
using NodePtr = std::shared_ptr<const Node>;
/// Counts the samples a source dropped in this process.
using SkipCounter = std::shared_ptr<std::atomic<std::int64_t>>;

/// One stage of a pipeline.
class Node {
 public:
  virtual ~Node() = default;
  /// Text for describe() and error messages, e.g. "batch(64)".
  virtual std::string name() const = 0;
  /// The nodes this one reads from.
  virtual std::vector<NodePtr> inputs() const { return {}; }
  virtual std::int64_t cardinality() const = 0;
  /// Whether indexed() is available (depends on the inputs, never on a key).
  virtual bool is_indexed() const { return false; }
  /// Random access to the pass `key`; only when is_indexed().
  virtual IndexedPtr indexed(PassKey key) const;
  /// Whether sequential reads should go through this node's (or an input's)
  /// own stream even though random access exists: true where a prefetch
  /// thread lies below. Default: whether any input does.
  virtual bool streams_itself() const;
  /// Sequential access to the pass `key`. Default: over indexed() when
  /// available (and not streams_itself()), else open_stream().
  virtual StreamPtr stream(PassKey key) const;
  virtual Batching batching() const { return {}; }
  /// This node rebuilt to produce rank spec.rank's micro-batches; only when
  /// batching().kind is Splittable.
  virtual NodePtr split(const SplitSpec& spec) const;
  /// Adds the counters of the sources at or below this node that drop bad
  /// samples (an image source with OnBadSample::skip; see is_dropped in
  /// element_ops.h). Default: the inputs'.
  virtual void skip_counters(std::vector<SkipCounter>& out) const;

 protected:
  /// Sequential access for nodes that are not (or not always) indexed.
  virtual StreamPtr open_stream(PassKey key) const;
};

/// Whether the pipeline may drop samples: a static property of the nodes,
/// the same on every rank (training then counts each step's samples).
bool may_drop_samples(const NodePtr& node);
/// Samples dropped so far by the sources below `node` in this process, each
/// source counted once.
std::int64_t samples_dropped(const NodePtr& node);

/// "a -> b -> c" for a linear pipeline; inputs of zip/concatenate in brackets.
std::string describe(const NodePtr& node);

/// Batching of a node that acts on whole elements one by one (map, take,
/// repeat, ...): whatever its input is.
Batching pass_through_batching(const NodePtr& input);
/// Batching of a node whose output depends on sample content (filter, ...):
/// samples stay samples, batches become unsplittable because of `node`.
Batching blocking_batching(const NodePtr& input, const std::string& node);

}  // namespace tnt::data::detail
