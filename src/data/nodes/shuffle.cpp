// shuffle: a buffered shuffle whose order is a pure function of the seed and
// the pass key (the epoch). Over a finite random-access input it permutes
// indices only (shuffle_order), so nothing is read until a consumer asks for
// it; otherwise its buffer holds deferred elements.
#include <sstream>

#include <tarantella/base/argument_error.h>
#include <tarantella/base/error.h>

#include "data/pipeline/nodes.h"
#include "data/nodes/shuffle_order.h"

namespace tnt::data::detail {
namespace {

class ShuffleView final : public Indexed {
 public:
  ShuffleView(IndexedPtr input, std::vector<std::int64_t> order)
      : input_(std::move(input)), order_(std::move(order)) {}
  std::int64_t size() const override { return static_cast<std::int64_t>(order_.size()); }
  Element get(std::int64_t index) override { return input_->get(source(index)); }
  std::vector<Element> get_many(const std::vector<std::int64_t>& indices) override {
    return input_->get_many(sources(indices));
  }
  Element gather(const std::vector<std::int64_t>& indices) override {
    return input_->gather(sources(indices));
  }
  std::int64_t global_size(std::int64_t index) override {
    return input_->global_size(source(index));
  }

 private:
  std::int64_t source(std::int64_t index) const {
    return order_.at(static_cast<std::size_t>(index));
  }
  std::vector<std::int64_t> sources(const std::vector<std::int64_t>& indices) const {
    std::vector<std::int64_t> out;
    out.reserve(indices.size());
    for (std::int64_t i : indices) out.push_back(source(i));
    return out;
  }
  IndexedPtr input_;
  std::vector<std::int64_t> order_;
};

class ShuffleStream final : public Stream {
 public:
  ShuffleStream(StreamPtr input, std::int64_t capacity, std::uint64_t seed)
      : input_(std::move(input)), buffer_(capacity, seed) {}
  std::optional<Deferred> next_deferred() override {
    while (!buffer_.full()) {
      auto item = read();
      if (!item) break;
      buffer_.add(std::move(*item));
    }
    if (buffer_.empty()) return std::nullopt;
    Item out = buffer_.draw([this] { return read(); });
    global_size_ = out.global_size;
    return std::move(out.element);
  }
  std::int64_t global_size() const override { return global_size_; }

 private:
  // An element in the buffer, with its global size (see node.h).
  struct Item {
    Deferred element;
    std::int64_t global_size;
  };
  std::optional<Item> read() {
    auto d = input_->next_deferred();
    if (!d) return std::nullopt;
    return Item{std::move(*d), input_->global_size()};
  }
  StreamPtr input_;
  ShuffleBuffer<Item> buffer_;
  std::int64_t global_size_ = kNotSplit;  // of the element handed out last
};

class ShuffleNode final : public Node {
 public:
  ShuffleNode(NodePtr input, std::int64_t capacity, std::optional<std::uint64_t> seed,
              bool reshuffle)
      : input_(std::move(input)), capacity_(capacity), seed_(seed), reshuffle_(reshuffle) {}
  std::string name() const override {
    std::ostringstream out;
    out << "shuffle(" << capacity_ << ", seed=";
    if (seed_) {
      out << *seed_;
    } else {
      out << "default";
    }
    out << (reshuffle_ ? "" : ", fixed") << ")";
    return out.str();
  }
  std::vector<NodePtr> inputs() const override { return {input_}; }
  std::int64_t cardinality() const override { return input_->cardinality(); }
  bool is_indexed() const override { return input_->is_indexed() && input_->cardinality() >= 0; }
  IndexedPtr indexed(PassKey key) const override {
    auto input = input_->indexed(key);
    auto order = shuffle_order(input->size(), capacity_, pass_seed(key));
    return std::make_shared<ShuffleView>(std::move(input), std::move(order));
  }
  Batching batching() const override { return pass_through_batching(input_); }
  NodePtr split(const SplitSpec& spec) const override {
    return std::make_shared<ShuffleNode>(input_->split(spec), capacity_, seed_, reshuffle_);
  }

 protected:
  StreamPtr open_stream(PassKey key) const override {
    return std::make_unique<ShuffleStream>(input_->stream(key), capacity_, pass_seed(key));
  }

 private:
  std::uint64_t pass_seed(PassKey key) const {
    // Without a seed of its own: the default in force now, so tnt::set_seed
    // reaches a dataset built before it.
    const std::uint64_t seed = seed_.value_or(default_shuffle_seed());
    return reshuffle_ ? mix64(seed ^ mix64(key)) : mix64(seed);
  }
  NodePtr input_;
  std::int64_t capacity_;
  std::optional<std::uint64_t> seed_;
  bool reshuffle_;
};

}  // namespace

NodePtr make_shuffle(NodePtr input, std::int64_t buffer_size, std::optional<std::uint64_t> seed,
                     bool reshuffle) {
  TNT_CHECK_ARG(buffer_size >= 1, "shuffle: buffer_size ", buffer_size,
            " is invalid: use at least 1 (the dataset size for a uniform shuffle)");
  return std::make_shared<ShuffleNode>(std::move(input), buffer_size, seed, reshuffle);
}

}  // namespace tnt::data::detail
