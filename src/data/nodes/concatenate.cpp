// concatenate: the first input's elements, then the second's, both read with
// the same pass key. Two batched inputs with the same batch size stay
// splittable: every rank splits each of their batches the same way.
#include <tarantella/base/error.h>

#include "data/nodes/index_runs.h"
#include "data/pipeline/nodes.h"

namespace tnt::data::detail {
namespace {

class ConcatenateView final : public Indexed {
 public:
  ConcatenateView(IndexedPtr first, IndexedPtr second)
      : first_(std::move(first)), second_(std::move(second)), n_(first_->size()) {}
  std::int64_t size() const override {
    const auto m = second_->size();
    return m == kInfiniteCardinality ? m : n_ + m;
  }
  Element get(std::int64_t index) override {
    return index < n_ ? first_->get(index) : second_->get(index - n_);
  }
  std::vector<Element> get_many(const std::vector<std::int64_t>& indices) override {
    return get_many_in_runs(
        indices, [this](std::int64_t i) { return locate(i); },
        [this](std::int64_t v) -> Indexed& { return view(v); });
  }
  Element gather(const std::vector<std::int64_t>& indices) override {
    return gather_in_runs(
        indices, [this](std::int64_t i) { return locate(i); },
        [this](std::int64_t v) -> Indexed& { return view(v); });
  }
  std::int64_t global_size(std::int64_t index) override {
    return index < n_ ? first_->global_size(index) : second_->global_size(index - n_);
  }

 private:
  Location locate(std::int64_t i) const { return i < n_ ? Location{0, i} : Location{1, i - n_}; }
  Indexed& view(std::int64_t v) { return v == 0 ? *first_ : *second_; }
  IndexedPtr first_, second_;
  std::int64_t n_;
};

class ConcatenateStream final : public Stream {
 public:
  ConcatenateStream(StreamPtr first, NodePtr second, PassKey key)
      : current_(std::move(first)), second_(std::move(second)), key_(key) {}
  std::optional<Deferred> next_deferred() override {
    for (;;) {
      if (auto d = current_->next_deferred()) return d;
      if (!second_) return std::nullopt;
      current_ = second_->stream(key_);
      second_.reset();
    }
  }
  std::int64_t global_size() const override { return current_->global_size(); }

 private:
  StreamPtr current_;
  NodePtr second_;
  PassKey key_;
};

class ConcatenateNode final : public Node {
 public:
  ConcatenateNode(NodePtr first, NodePtr second)
      : first_(std::move(first)), second_(std::move(second)) {}
  std::string name() const override { return "concatenate"; }
  std::vector<NodePtr> inputs() const override { return {first_, second_}; }
  std::int64_t cardinality() const override {
    const auto a = first_->cardinality(), b = second_->cardinality();
    if (a == kInfiniteCardinality) return a;
    if (a == kUnknownCardinality || b == kUnknownCardinality) return kUnknownCardinality;
    if (b == kInfiniteCardinality) return b;
    return a + b;
  }
  bool is_indexed() const override {
    return first_->is_indexed() && second_->is_indexed() && first_->cardinality() >= 0;
  }
  IndexedPtr indexed(PassKey key) const override {
    return std::make_shared<ConcatenateView>(first_->indexed(key), second_->indexed(key));
  }
  Batching batching() const override {
    const Batching a = first_->batching(), b = second_->batching();
    if (a.kind == b.kind && a.batch_size == b.batch_size) return a;
    Batching out = a.kind == Batching::Kind::Samples ? b : a;
    out.kind = Batching::Kind::Blocked;
    out.blocker = "concatenate of datasets batched differently (batch after concatenate)";
    return out;
  }
  NodePtr split(const SplitSpec& spec) const override {
    return std::make_shared<ConcatenateNode>(first_->split(spec), second_->split(spec));
  }

 protected:
  StreamPtr open_stream(PassKey key) const override {
    if (first_->cardinality() == kInfiniteCardinality) return first_->stream(key);
    return std::make_unique<ConcatenateStream>(first_->stream(key), second_, key);
  }

 private:
  NodePtr first_, second_;
};

}  // namespace

NodePtr make_concatenate(NodePtr first, NodePtr second) {
  return std::make_shared<ConcatenateNode>(std::move(first), std::move(second));
}

}  // namespace tnt::data::detail
