// tnt::data::Dataset: a lazy, composable input pipeline in the spirit of
// tf.data. A Dataset is an immutable description (a chain of nodes shared by
// all copies); nothing is read or computed until it is iterated.
//
// How it runs. Most nodes offer random access to their elements for one pass
// (sources, map, shuffle, batch, take, skip, shard, repeat, zip, ...). A batch
// over such a pipeline asks for exactly the sample indices it needs, and a
// source answers with one vectorized gather: shuffling moves indices, not
// samples, and map runs only on samples that are asked for. Nodes whose
// output depends on the content of the samples (filter, unbatch) make the
// pipeline above them sequential; there, samples travel as deferred
// computations, so a map above a filter still runs only on samples that are
// used. This is what lets distribute() (distribute.h) compute on each rank
// only that rank's share of every global batch.
//
// Epochs. iterate(epoch) starts a pass; shuffle orders are a pure function of
// (seed, epoch), so every rank, and every rerun, sees the same order. A
// shuffle without a seed uses kDefaultShuffleSeed, never a random one.
// Range-for over a Dataset counts epochs 0, 1, 2, ... per Dataset (copies
// share the counter).
//
// Threads. A pass is driven by one thread at a time. map(..., num_workers(k))
// runs the user function on k threads; prefetch(n) runs the pipeline below it
// on a background thread. Both belong to the iterator and are joined when it
// is destroyed, also when iteration stops early.
#pragma once

#include <tarantella/base/default_seed.h>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <tarantella/data/csv.h>
#include <tarantella/data/element.h>
#include <tarantella/data/map_options.h>
#include <tarantella/data/padding_options.h>

namespace tnt::data {

namespace detail {
class Node;
class Stream;
}  // namespace detail

// The default shuffle seed (kDefaultShuffleSeed, default_shuffle_seed(),
// set_default_shuffle_seed()) lives in <tarantella/base/default_seed.h>.
using tnt::default_shuffle_seed;
using tnt::kDefaultShuffleSeed;
using tnt::set_default_shuffle_seed;

/// A function applied to every element by Dataset::map.
/// Example: tnt::data::MapFunction scale = [](Element e) { e[0] = e[0] / 255; return e; };
using MapFunction = std::function<Element(Element)>;
/// A function applied to every element by Dataset::map_seeded: it draws
/// every random number from `generator`, which is seeded by (seed, epoch,
/// position of the element in the pass).
/// Example:
///   tnt::data::SeededMapFunction jitter = [](Element e, at::Generator& g) {
///     e[0] = e[0] + 0.1 * torch::randn(e[0].sizes(), g); return e; };
using SeededMapFunction = std::function<Element(Element, at::Generator& generator)>;
/// A predicate that keeps an element in Dataset::filter.
/// Example:
///   tnt::data::FilterPredicate small = [](const Element& e) { return e[1].item<int64_t>() < 5; };
using FilterPredicate = std::function<bool(const Element&)>;
/// A generator for Dataset::from_generator: the element at `index`.
/// Example:
///   tnt::data::GeneratorFunction square = [](int64_t i) { return Element{torch::tensor(i * i)}; };
using GeneratorFunction = std::function<Element(std::int64_t index)>;

/// A lazy input pipeline. Transformations return a new Dataset and leave this
/// one unchanged.
///
/// Example:
///   auto train = tnt::data::Dataset::from_tensor_slices({images, labels})
///                    .shuffle(60000, /*seed=*/42)
///                    .map([](tnt::data::Element e) { e[0] = e[0].div(255); return e; })
///                    .batch(64)
///                    .prefetch(2);
///   for (const tnt::data::Element& batch : train) { ... }   // epoch 0
///   for (const tnt::data::Element& batch : train) { ... }   // epoch 1, reshuffled
class Dataset {
 public:
  /// One pass over a Dataset. Move-only; destroying it stops every thread
  /// the pass started.
  ///
  /// Example:
  ///   auto it = ds.iterate(/*epoch=*/3);
  ///   while (auto element = it.next()) use(*element);
  class Iterator {
   public:
    /// `keep_dropped`: hand out dropped samples (elements with no tensors,
    /// see OnBadSample::skip) instead of passing over them.
    explicit Iterator(std::unique_ptr<detail::Stream> stream, bool keep_dropped = false);
    Iterator(Iterator&&) noexcept;
    Iterator& operator=(Iterator&&) noexcept;
    ~Iterator();
    /// The next element, or nullopt at the end of the pass.
    std::optional<Element> next();
    /// Passes over the next `n` elements (n >= 0) without computing them
    /// where the pipeline allows: random-access pipelines move their
    /// position, map functions are not run on skipped elements, and a
    /// prefetch thread starts reading after the gap. Returns how many were
    /// passed (fewer when the pass ends first).
    ///
    /// Example: auto it = ds.iterate(0); it.skip(100); auto e = it.next();  // element 100
    std::int64_t skip(std::int64_t n);

   private:
    std::unique_ptr<detail::Stream> stream_;
    bool keep_dropped_ = false;
  };

  /// End marker for range-for.
  /// Example: for (auto it = ds.begin(); it != ds.end(); ++it) use(*it);
  struct RangeEnd {};

  /// Input iterator for range-for (see begin()).
  ///
  /// Example:
  ///   for (const tnt::data::Element& e : ds) use(e);
  class RangeIterator {
   public:
    explicit RangeIterator(Iterator it);
    const Element& operator*() const { return *current_; }
    const Element* operator->() const { return &*current_; }
    RangeIterator& operator++();
    bool operator!=(const RangeEnd&) const { return current_.has_value(); }

   private:
    Iterator it_;
    std::optional<Element> current_;
  };

  // ---- sources ----

  /// Slices every tensor along dimension 0: element i is {t[i] for t}. All
  /// tensors must have the same size in dimension 0.
  static Dataset from_tensor_slices(Element tensors);
  /// A dataset of exactly one element: `tensors`.
  static Dataset from_tensors(Element tensors);
  /// Scalars int64 start, start+step, ... up to (not including) stop.
  static Dataset range(std::int64_t start, std::int64_t stop, std::int64_t step = 1);
  /// range(0, stop).
  static Dataset range(std::int64_t stop);
  /// Element i is generator(i), for i in 0..size-1 (size may be
  /// kInfiniteCardinality). The generator is called only for elements that
  /// are used, in any order, from one thread at a time.
  static Dataset from_generator(GeneratorFunction generator, std::int64_t size);
  /// One component per IDX file (read_idx), sliced along dimension 0.
  static Dataset from_idx(const std::vector<std::string>& paths);
  /// Rows of a numeric CSV file (see CsvOptions).
  static Dataset from_csv(const std::string& path, const CsvOptions& options = CsvOptions());
  /// Element i is the concatenation of the datasets' elements i; ends with the
  /// shortest dataset.
  static Dataset zip(const std::vector<Dataset>& datasets);

  // ---- transformations ----

  /// Applies `fn` to every element (see MapOptions for parallel workers).
  Dataset map(MapFunction fn, const MapOptions& options = MapOptions()) const;
  /// Like map, for random per-sample work (augmentation): `fn` gets a CPU
  /// generator seeded by (seed, epoch, the element's position in the pass)
  /// and must draw every random number from it. The element at a position
  /// then comes out the same at any rank count, any num_workers, and in a
  /// resumed run; another epoch draws differently. Without a seed, the
  /// default seed in force when each pass starts. Place it before batch (a
  /// seeded map after batch cannot be distributed).
  ///
  /// Example:
  ///   ds.map_seeded(tnt::data::transforms::random_horizontal_flip(), /*seed=*/7);
  Dataset map_seeded(SeededMapFunction fn, std::optional<std::uint64_t> seed = std::nullopt,
                     const MapOptions& options = MapOptions()) const;
  /// Keeps the elements for which `predicate` is true. Place it before batch
  /// for distribution (a filter of whole batches cannot be split).
  Dataset filter(FilterPredicate predicate) const;
  /// Buffered shuffle as in tf.data: a buffer of `buffer_size` elements from
  /// which each output is drawn at random (buffer_size >= cardinality gives a
  /// uniform shuffle). The order is a pure function of (seed, epoch), or of
  /// the seed alone when reshuffle_each_iteration is false. Without a seed,
  /// the default seed in force when each pass starts (tnt::set_seed sets
  /// it, also for datasets built before the call).
  Dataset shuffle(std::int64_t buffer_size, std::optional<std::uint64_t> seed = std::nullopt,
                  bool reshuffle_each_iteration = true) const;
  /// Stacks `batch_size` consecutive elements along a new first dimension; the
  /// last batch may be shorter unless drop_remainder.
  Dataset batch(std::int64_t batch_size, bool drop_remainder = false) const;
  /// Like batch, but pads the elements of each batch to a common shape.
  /// Distributed, each rank pads its micro-batch to the longest of its own
  /// samples (see distribute.h).
  Dataset padded_batch(std::int64_t batch_size,
                       const PaddingOptions& options = PaddingOptions()) const;
  /// Splits every element along its first dimension into separate elements.
  Dataset unbatch() const;
  /// Repeats the dataset `count` times (-1: forever). Each repetition is a new
  /// pass, so a shuffle below reshuffles.
  Dataset repeat(std::int64_t count = -1) const;
  /// At most the first `count` elements (-1: all).
  Dataset take(std::int64_t count) const;
  /// All but the first `count` elements (-1: none left).
  Dataset skip(std::int64_t count) const;
  /// Every num_shards-th element starting at `index`.
  Dataset shard(std::int64_t num_shards, std::int64_t index) const;
  /// This dataset's elements followed by `other`'s.
  Dataset concatenate(const Dataset& other) const;
  /// Prepends an int64 scalar counter (start, start+1, ...) to every element.
  Dataset enumerate(std::int64_t start = 0) const;
  /// Keeps the elements of the first pass in memory and replays them in every
  /// later pass (so a shuffle below is not reshuffled).
  Dataset cache() const;
  /// Produces up to `buffer_size` elements ahead on a background thread.
  /// Place it last, after batch: distribution reads the samples below a
  /// batch by random access (only the rank's own), bypassing a prefetch
  /// placed there.
  Dataset prefetch(std::int64_t buffer_size = 1) const;

  // ---- queries and iteration ----

  /// Number of elements, or kInfiniteCardinality / kUnknownCardinality.
  std::int64_t cardinality() const;
  /// A pass over the dataset; `epoch` selects the shuffle order.
  Iterator iterate(std::int64_t epoch) const;
  /// A pass over the next epoch of this Dataset (0, 1, 2, ...).
  RangeIterator begin() const;
  RangeEnd end() const { return {}; }
  /// The pipeline as text, e.g. "tensor_slices(60000) -> shuffle(60000) -> batch(64)".
  std::string describe() const;
  /// Whether the pipeline may drop bad samples (an image source with
  /// OnBadSample::skip): the same on every rank. Iteration passes over a
  /// dropped sample, and over a batch whose samples were all dropped.
  bool may_skip_samples() const;
  /// Samples this process's sources of the pipeline have dropped so far
  /// (cumulative over passes; each rank counts the samples it read).
  /// Example: auto before = ds.samples_skipped(); ...; ds.samples_skipped() - before
  std::int64_t samples_skipped() const;

  /// The pipeline's nodes (for distribute()).
  const std::shared_ptr<const detail::Node>& node() const { return node_; }
  explicit Dataset(std::shared_ptr<const detail::Node> node);

 private:
  std::shared_ptr<const detail::Node> node_;
  std::shared_ptr<std::atomic<std::int64_t>> next_epoch_;
};

}  // namespace tnt::data
