// map and map_seeded: apply a user function to every element. With random
// access they map exactly the indices asked for; over a stream they hand out
// deferred computations, so samples that a consumer (a micro-batch) skips are
// never mapped. num_workers > 1 maps the elements of one request (e.g. one
// batch) on a WorkerPool, keeping their order.
//
// Note: map_seeded gives the function a generator seeded by (seed, pass key,
// position of the element in the pass). The position is the same whichever
// rank or worker computes the element (distribution asks for global
// positions), so the random draws are too: augmentation gives the same
// tensors at any rank and worker count, and in a resumed run.
#include <ATen/CPUGeneratorImpl.h>
#include <tarantella/base/default_seed.h>
#include <tarantella/base/error.h>

#include <algorithm>
#include <deque>

#include "data/pipeline/element_ops.h"
#include "data/pipeline/nodes.h"
#include "data/pipeline/worker_pool.h"

namespace tnt::data::detail {
namespace {

// The function of one pass: element and its position in the pass.
using PassFunction = std::function<Element(Element, std::int64_t position)>;
using PassFunctionPtr = std::shared_ptr<const PassFunction>;
// Makes the pass function for a pass key (where map_seeded fixes its seed).
using PassBinder = std::function<PassFunctionPtr(PassKey)>;

// The function and, for num_workers > 1, the pool that runs it. One per pass.
// The user's function on an element that was not dropped. An element with
// no tensors is how a dropped sample travels (element_ops.h), so a function
// that returned one would silently drop its element from a dataset whose
// steps are weighted by the nominal batch size: an error instead.
Element call(const PassFunction& fn, Element e, std::int64_t position) {
  if (is_dropped(e)) return e;
  Element out = fn(std::move(e), position);
  TNT_CHECK(!out.empty(), "map: the function returned an element with no tensors (at position ",
            position, "): return at least one tensor; to leave elements out, use filter");
  return out;
}

class Mapper {
 public:
  Mapper(PassFunctionPtr fn, int workers) : fn_(std::move(fn)), workers_(workers) {}

  // A dropped sample stays dropped: the user's function never sees it.
  Element apply(Element e, std::int64_t position) const {
    return call(*fn_, std::move(e), position);
  }

  std::vector<Element> apply_all(std::vector<Element> items,
                                 const std::vector<std::int64_t>& positions) {
    auto one = [&](std::int64_t i) {
      auto& e = items[static_cast<std::size_t>(i)];
      e = apply(std::move(e), positions[static_cast<std::size_t>(i)]);
    };
    const auto n = static_cast<std::int64_t>(items.size());
    if (workers_ <= 1 || n <= 1) {
      for (std::int64_t i = 0; i < n; ++i) one(i);
      return items;
    }
    if (!pool_) pool_ = std::make_unique<WorkerPool>(workers_);
    pool_->run(n, one);
    return items;
  }

  int workers() const { return workers_; }
  const PassFunctionPtr& fn() const { return fn_; }

 private:
  PassFunctionPtr fn_;
  int workers_;
  std::unique_ptr<WorkerPool> pool_;
};

class MapView final : public Indexed {
 public:
  MapView(IndexedPtr input, Mapper mapper) : input_(std::move(input)), mapper_(std::move(mapper)) {}
  std::int64_t size() const override { return input_->size(); }
  Element get(std::int64_t index) override { return mapper_.apply(input_->get(index), index); }
  std::vector<Element> get_many(const std::vector<std::int64_t>& indices) override {
    return mapper_.apply_all(input_->get_many(indices), indices);
  }
  Element gather(const std::vector<std::int64_t>& indices) override {
    return stack_elements(get_many(indices), "batch after map");
  }
  std::int64_t global_size(std::int64_t index) override { return input_->global_size(index); }

 private:
  IndexedPtr input_;
  Mapper mapper_;
};

class MapStream final : public Stream {
 public:
  MapStream(StreamPtr input, Mapper mapper)
      : input_(std::move(input)), mapper_(std::move(mapper)) {}

  std::optional<Deferred> next_deferred() override {
    if (!ready_.empty()) return Deferred(pop());
    auto d = input_->next_deferred();
    if (!d) return std::nullopt;
    global_size_ = input_->global_size();
    return Deferred([d = std::move(*d), fn = mapper_.fn(), position = read_++] {
      return call(*fn, d.force(), position);
    });
  }

  // Element by element, num_workers inputs are read and mapped together.
  std::optional<Element> next() override {
    if (ready_.empty()) {
      std::vector<Element> inputs;
      std::vector<std::int64_t> positions;
      while (static_cast<int>(inputs.size()) < std::max(1, mapper_.workers())) {
        auto e = input_->next();
        if (!e) break;
        inputs.push_back(std::move(*e));
        positions.push_back(read_++);
        ready_sizes_.push_back(input_->global_size());
      }
      for (auto& e : mapper_.apply_all(std::move(inputs), positions)) {
        ready_.push_back(std::move(e));
      }
    }
    if (ready_.empty()) return std::nullopt;
    return pop();
  }
  // Mapped elements already waiting are dropped; the rest is never mapped.
  std::int64_t skip(std::int64_t n) override {
    std::int64_t done = 0;
    for (; done < n && !ready_.empty(); ++done) pop();
    const std::int64_t skipped = input_->skip(n - done);
    read_ += skipped;
    return done + skipped;
  }
  std::int64_t global_size() const override { return global_size_; }

 private:
  Element pop() {
    Element e = std::move(ready_.front());
    ready_.pop_front();
    global_size_ = ready_sizes_.front();
    ready_sizes_.pop_front();
    return e;
  }
  StreamPtr input_;
  Mapper mapper_;
  std::deque<Element> ready_;
  std::deque<std::int64_t> ready_sizes_;  // their global sizes
  std::int64_t global_size_ = kNotSplit;  // of the element handed out last
  std::int64_t read_ = 0;                 // position of the next element read from the input
};

// A map node: plain (a MapFunction, splittable after batch) or seeded (a
// per-sample generator: only below batch, see batching()).
class MapNode final : public Node {
 public:
  MapNode(NodePtr input, PassBinder binder, std::shared_ptr<const MapFunction> plain, int workers)
      : input_(std::move(input)),
        binder_(std::move(binder)),
        plain_(std::move(plain)),
        workers_(workers) {}
  std::string name() const override {
    const std::string base = plain_ ? "map" : "map_seeded";
    return workers_ > 1 ? base + "(num_workers=" + std::to_string(workers_) + ")" : base;
  }
  std::vector<NodePtr> inputs() const override { return {input_}; }
  std::int64_t cardinality() const override { return input_->cardinality(); }
  bool is_indexed() const override { return input_->is_indexed(); }
  IndexedPtr indexed(PassKey key) const override {
    return std::make_shared<MapView>(input_->indexed(key), Mapper(binder_(key), workers_));
  }
  // A seeded map after batch would draw per batch, so a micro-batch would
  // draw differently from its global batch: it must come before batch.
  Batching batching() const override {
    if (plain_) return pass_through_batching(input_);
    return blocking_batching(input_, "map_seeded (random draws per sample; place it before batch)");
  }
  NodePtr split(const SplitSpec& spec) const override {
    return std::make_shared<MapNode>(input_->split(spec), binder_, plain_, workers_);
  }

  static PassBinder plain_binder(std::shared_ptr<const MapFunction> fn) {
    auto pass = std::make_shared<const PassFunction>(
        [fn](Element e, std::int64_t) { return (*fn)(std::move(e)); });
    return [pass](PassKey) { return pass; };
  }

 protected:
  StreamPtr open_stream(PassKey key) const override {
    return std::make_unique<MapStream>(input_->stream(key), Mapper(binder_(key), workers_));
  }

 private:
  NodePtr input_;
  PassBinder binder_;
  std::shared_ptr<const MapFunction> plain_;
  int workers_;
};

// The generator of the element at `position` in pass `key`. Only the low 32
// bits of a CPU generator's seed matter (mt19937), so the inputs are mixed
// into them.
PassBinder seeded_binder(std::shared_ptr<const SeededMapFunction> fn,
                         std::optional<std::uint64_t> seed) {
  return [fn, seed](PassKey key) {
    const std::uint64_t s = seed ? *seed : default_shuffle_seed();
    const std::uint64_t pass_seed = mix64(mix64(s) ^ key);
    return std::make_shared<const PassFunction>([fn, pass_seed](Element e, std::int64_t position) {
      at::Generator gen = at::make_generator<at::CPUGeneratorImpl>(
          mix64(pass_seed ^ static_cast<std::uint64_t>(position)) & 0xFFFFFFFFu);
      return (*fn)(std::move(e), gen);
    });
  };
}

void check_workers(const char* what, const MapOptions& options) {
  TNT_CHECK(options.num_workers() >= 1, what, ": num_workers ", options.num_workers(),
            " is invalid: use 1 (the calling thread) or more");
}

}  // namespace

NodePtr make_map(NodePtr input, MapFunction fn, const MapOptions& options) {
  TNT_CHECK(fn, "map: the function is empty");
  check_workers("map", options);
  auto plain = std::make_shared<const MapFunction>(std::move(fn));
  return std::make_shared<MapNode>(std::move(input), MapNode::plain_binder(plain), plain,
                                   options.num_workers());
}

NodePtr make_seeded_map(NodePtr input, SeededMapFunction fn, std::optional<std::uint64_t> seed,
                        const MapOptions& options) {
  TNT_CHECK(fn, "map_seeded: the function is empty");
  check_workers("map_seeded", options);
  auto binder = seeded_binder(std::make_shared<const SeededMapFunction>(std::move(fn)), seed);
  return std::make_shared<MapNode>(std::move(input), std::move(binder), nullptr,
                                   options.num_workers());
}

}  // namespace tnt::data::detail
