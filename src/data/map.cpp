// map: applies a user function to every element. With random access it maps
// exactly the indices asked for; over a stream it hands out deferred
// computations, so samples that a consumer (a micro-batch) skips are never
// mapped. num_workers > 1 maps the elements of one request (e.g. one batch)
// on a WorkerPool, keeping their order.
#include <algorithm>
#include <deque>

#include <tarantella/base/error.h>

#include "data/element_ops.h"
#include "data/micro_batch.h"
#include "data/nodes.h"
#include "data/worker_pool.h"

namespace tnt::data::detail {
namespace {

// The function and, for num_workers > 1, the pool that runs it. One per pass.
class Mapper {
 public:
  Mapper(std::shared_ptr<const MapFunction> fn, int workers)
      : fn_(std::move(fn)), workers_(workers) {}

  Element apply(Element e) const { return (*fn_)(std::move(e)); }

  std::vector<Element> apply_all(std::vector<Element> items) {
    if (workers_ <= 1 || items.size() <= 1) {
      for (auto& e : items) e = apply(std::move(e));
      return items;
    }
    if (!pool_) pool_ = std::make_unique<WorkerPool>(workers_);
    pool_->run(static_cast<std::int64_t>(items.size()), [&](std::int64_t i) {
      auto& e = items[static_cast<std::size_t>(i)];
      e = apply(std::move(e));
    });
    return items;
  }

  int workers() const { return workers_; }
  const std::shared_ptr<const MapFunction>& fn() const { return fn_; }

 private:
  std::shared_ptr<const MapFunction> fn_;
  int workers_;
  std::unique_ptr<WorkerPool> pool_;
};

class MapView final : public Indexed {
 public:
  MapView(IndexedPtr input, Mapper mapper) : input_(std::move(input)), mapper_(std::move(mapper)) {}
  std::int64_t size() const override { return input_->size(); }
  Element get(std::int64_t index) override { return mapper_.apply(input_->get(index)); }
  std::vector<Element> get_many(const std::vector<std::int64_t>& indices) override {
    return mapper_.apply_all(input_->get_many(indices));
  }
  Element gather(const std::vector<std::int64_t>& indices) override {
    return stack_elements(get_many(indices), "batch after map");
  }

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
    return Deferred([d = std::move(*d), fn = mapper_.fn()] { return (*fn)(d.force()); });
  }

  // Element by element, num_workers inputs are read and mapped together.
  std::optional<Element> next() override {
    if (ready_.empty()) {
      std::vector<Element> inputs;
      while (static_cast<int>(inputs.size()) < std::max(1, mapper_.workers())) {
        auto e = input_->next();
        if (!e) break;
        inputs.push_back(std::move(*e));
      }
      for (auto& e : mapper_.apply_all(std::move(inputs))) ready_.push_back(std::move(e));
    }
    if (ready_.empty()) return std::nullopt;
    return pop();
  }
  // Mapped elements already waiting are dropped; the rest is never mapped.
  std::int64_t skip(std::int64_t n) override {
    std::int64_t done = 0;
    for (; done < n && !ready_.empty(); ++done) ready_.pop_front();
    return done + input_->skip(n - done);
  }

 private:
  Element pop() {
    Element e = std::move(ready_.front());
    ready_.pop_front();
    return e;
  }
  StreamPtr input_;
  Mapper mapper_;
  std::deque<Element> ready_;
};

class MapNode final : public Node {
 public:
  MapNode(NodePtr input, std::shared_ptr<const MapFunction> fn, int workers)
      : input_(std::move(input)), fn_(std::move(fn)), workers_(workers) {}
  std::string name() const override {
    return workers_ > 1 ? "map(num_workers=" + std::to_string(workers_) + ")" : "map";
  }
  std::vector<NodePtr> inputs() const override { return {input_}; }
  std::int64_t cardinality() const override { return input_->cardinality(); }
  bool is_indexed() const override { return input_->is_indexed(); }
  IndexedPtr indexed(PassKey key) const override {
    return std::make_shared<MapView>(input_->indexed(key), Mapper(fn_, workers_));
  }
  Batching batching() const override { return pass_through_batching(input_); }
  NodePtr split(const SplitSpec& spec) const override {
    return std::make_shared<MapNode>(
        input_->split(spec), std::make_shared<const MapFunction>(on_micro_batch(*fn_)), workers_);
  }

 protected:
  StreamPtr open_stream(PassKey key) const override {
    return std::make_unique<MapStream>(input_->stream(key), Mapper(fn_, workers_));
  }

 private:
  NodePtr input_;
  std::shared_ptr<const MapFunction> fn_;
  int workers_;
};

}  // namespace

NodePtr make_map(NodePtr input, MapFunction fn, const MapOptions& options) {
  TNT_CHECK(fn, "map: the function is empty");
  TNT_CHECK(options.num_workers() >= 1, "map: num_workers ", options.num_workers(),
            " is invalid: use 1 (the calling thread) or more");
  return std::make_shared<MapNode>(
      std::move(input), std::make_shared<const MapFunction>(std::move(fn)), options.num_workers());
}

}  // namespace tnt::data::detail
