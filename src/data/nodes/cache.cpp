// cache: the first pass that reads an element fixes it for every later pass.
// All passes read the input with the key of the first pass, so a shuffle
// below is frozen in that pass's order, and an element is computed at most
// once however the passes interleave. With random access only the indices
// that are asked for are computed and kept; over a stream, elements are kept
// in order as far as any pass has read.
#include <mutex>

#include <tarantella/base/error.h>

#include "data/pipeline/element_ops.h"
#include "data/pipeline/nodes.h"

namespace tnt::data::detail {
namespace {

// Shared by all passes over one cache node (copies of a Dataset included).
struct CacheState {
  std::mutex mutex;
  std::optional<PassKey> fill_key;
  std::vector<std::optional<Element>> by_index;  // random access
  std::vector<Element> in_order;                 // streams
  std::vector<std::int64_t> in_order_sizes;      // their global sizes
  bool complete = false;                         // streams: the input ended

  PassKey key_for(PassKey key) {
    std::lock_guard<std::mutex> lock(mutex);
    if (!fill_key) fill_key = key;
    return *fill_key;
  }
};

class CacheView final : public Indexed {
 public:
  CacheView(std::shared_ptr<CacheState> state, IndexedPtr input)
      : state_(std::move(state)), input_(std::move(input)) {}
  std::int64_t size() const override { return input_->size(); }
  Element get(std::int64_t index) override { return std::move(get_many({index}).front()); }
  // Reads the missing indices from the input in one request.
  std::vector<Element> get_many(const std::vector<std::int64_t>& indices) override {
    std::vector<Element> out(indices.size());
    std::vector<std::int64_t> missing;
    std::vector<std::size_t> slots;
    {
      std::lock_guard<std::mutex> lock(state_->mutex);
      for (std::size_t i = 0; i < indices.size(); ++i) {
        const auto& kept = state_->by_index.at(static_cast<std::size_t>(indices[i]));
        if (kept) {
          out[i] = *kept;
        } else {
          missing.push_back(indices[i]);
          slots.push_back(i);
        }
      }
    }
    if (missing.empty()) return out;
    auto computed = input_->get_many(missing);
    std::lock_guard<std::mutex> lock(state_->mutex);
    for (std::size_t j = 0; j < missing.size(); ++j) {
      auto& kept = state_->by_index[static_cast<std::size_t>(missing[j])];
      if (!kept) kept = std::move(computed[j]);
      out[slots[j]] = *kept;
    }
    return out;
  }
  Element gather(const std::vector<std::int64_t>& indices) override {
    return stack_elements(get_many(indices), "batch after cache");
  }
  std::int64_t global_size(std::int64_t index) override { return input_->global_size(index); }

 private:
  std::shared_ptr<CacheState> state_;
  IndexedPtr input_;
};

class CacheStream final : public EagerStream {
 public:
  CacheStream(std::shared_ptr<CacheState> state, NodePtr input)
      : state_(std::move(state)), input_(std::move(input)) {}
  std::optional<Element> next() override {
    {
      std::lock_guard<std::mutex> lock(state_->mutex);
      if (position_ < state_->in_order.size()) {
        global_size_ = state_->in_order_sizes[position_];
        return state_->in_order[position_++];
      }
      if (state_->complete) return std::nullopt;
    }
    auto e = read_input_at(position_);
    std::lock_guard<std::mutex> lock(state_->mutex);
    if (!e) {
      state_->complete = state_->complete || state_->in_order.size() == position_;
      return std::nullopt;
    }
    global_size_ = input_stream_->global_size();
    if (state_->in_order.size() == position_) {
      state_->in_order.push_back(*e);
      state_->in_order_sizes.push_back(global_size_);
    }
    ++position_;
    return e;
  }
  std::int64_t global_size() const override { return global_size_; }

 private:
  // The input element at `position`, from this pass's own input stream.
  std::optional<Element> read_input_at(std::size_t position) {
    if (!input_stream_) input_stream_ = input_->stream(*state_->fill_key);
    while (input_position_ < position) {
      if (!input_stream_->next_deferred()) return std::nullopt;
      ++input_position_;
    }
    ++input_position_;
    return input_stream_->next();
  }
  std::shared_ptr<CacheState> state_;
  NodePtr input_;
  StreamPtr input_stream_;
  std::size_t position_ = 0;
  std::size_t input_position_ = 0;
  std::int64_t global_size_ = kNotSplit;  // of the element handed out last
};

class CacheNode final : public Node {
 public:
  explicit CacheNode(NodePtr input)
      : input_(std::move(input)), state_(std::make_shared<CacheState>()) {
    if (is_indexed()) state_->by_index.resize(static_cast<std::size_t>(input_->cardinality()));
  }
  std::string name() const override { return "cache"; }
  std::vector<NodePtr> inputs() const override { return {input_}; }
  std::int64_t cardinality() const override { return input_->cardinality(); }
  bool is_indexed() const override { return input_->is_indexed() && input_->cardinality() >= 0; }
  IndexedPtr indexed(PassKey key) const override {
    return std::make_shared<CacheView>(state_, input_->indexed(state_->key_for(key)));
  }
  Batching batching() const override { return pass_through_batching(input_); }
  NodePtr split(const SplitSpec& spec) const override {
    // Below a cache, micro-batches are not collated into (nor read ahead
    // in) page-locked memory: the cache would keep every one of them (the
    // whole data set, rounded up to powers of two by the pinned allocator)
    // for good. The read-ahead above the cache pins each as it comes.
    SplitSpec below = spec;
    below.collate_into = nullptr;
    below.pin = {};
    return std::make_shared<CacheNode>(input_->split(below));
  }

 protected:
  StreamPtr open_stream(PassKey key) const override {
    state_->key_for(key);
    return std::make_unique<CacheStream>(state_, input_);
  }

 private:
  NodePtr input_;
  std::shared_ptr<CacheState> state_;
};

}  // namespace

NodePtr make_cache(NodePtr input) { return std::make_shared<CacheNode>(std::move(input)); }

}  // namespace tnt::data::detail
