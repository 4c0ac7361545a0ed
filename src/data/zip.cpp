// zip: element i is the tensors of element i of every input, concatenated
// into one tuple; ends with the shortest input. All inputs see the same pass
// key, so equal shuffles below them stay aligned.
#include <tarantella/base/error.h>

#include "data/nodes.h"

namespace tnt::data::detail {
namespace {

Element join(std::vector<Element> parts) {
  Element out;
  for (auto& p : parts) {
    for (auto& t : p) out.push_back(std::move(t));
  }
  return out;
}

class ZipView final : public Indexed {
 public:
  explicit ZipView(std::vector<IndexedPtr> inputs) : inputs_(std::move(inputs)) {
    size_ = kInfiniteCardinality;
    for (const auto& in : inputs_) {
      const auto n = in->size();
      if (n != kInfiniteCardinality && (size_ == kInfiniteCardinality || n < size_)) size_ = n;
    }
  }
  std::int64_t size() const override { return size_; }
  Element get(std::int64_t index) override {
    std::vector<Element> parts;
    for (auto& in : inputs_) parts.push_back(in->get(index));
    return join(std::move(parts));
  }
  std::vector<Element> get_many(const std::vector<std::int64_t>& indices) override {
    std::vector<std::vector<Element>> columns;
    for (auto& in : inputs_) columns.push_back(in->get_many(indices));
    std::vector<Element> out(indices.size());
    for (std::size_t i = 0; i < indices.size(); ++i) {
      std::vector<Element> parts;
      for (auto& column : columns) parts.push_back(std::move(column[i]));
      out[i] = join(std::move(parts));
    }
    return out;
  }
  Element gather(const std::vector<std::int64_t>& indices) override {
    std::vector<Element> parts;
    for (auto& in : inputs_) parts.push_back(in->gather(indices));
    return join(std::move(parts));
  }

 private:
  std::vector<IndexedPtr> inputs_;
  std::int64_t size_;
};

class ZipStream final : public Stream {
 public:
  explicit ZipStream(std::vector<StreamPtr> inputs) : inputs_(std::move(inputs)) {}
  std::optional<Deferred> next_deferred() override {
    std::vector<Deferred> parts;
    for (auto& in : inputs_) {
      auto d = in->next_deferred();
      if (!d) return std::nullopt;
      parts.push_back(std::move(*d));
    }
    return Deferred([parts = std::move(parts)] {
      std::vector<Element> elements;
      for (const auto& p : parts) elements.push_back(p.force());
      return join(std::move(elements));
    });
  }

 private:
  std::vector<StreamPtr> inputs_;
};

class ZipNode final : public Node {
 public:
  explicit ZipNode(std::vector<NodePtr> inputs) : inputs_(std::move(inputs)) {}
  std::string name() const override { return "zip"; }
  std::vector<NodePtr> inputs() const override { return inputs_; }
  std::int64_t cardinality() const override {
    std::int64_t out = kInfiniteCardinality;
    for (const auto& in : inputs_) {
      const auto n = in->cardinality();
      if (n == kUnknownCardinality) return n;
      if (n != kInfiniteCardinality && (out == kInfiniteCardinality || n < out)) out = n;
    }
    return out;
  }
  bool is_indexed() const override {
    for (const auto& in : inputs_) {
      if (!in->is_indexed()) return false;
    }
    return true;
  }
  IndexedPtr indexed(PassKey key) const override {
    std::vector<IndexedPtr> views;
    for (const auto& in : inputs_) views.push_back(in->indexed(key));
    return std::make_shared<ZipView>(std::move(views));
  }
  Batching batching() const override {
    for (const auto& in : inputs_) {
      if (in->batching().kind != Batching::Kind::Samples) {
        Batching b = in->batching();
        b.kind = Batching::Kind::Blocked;
        b.blocker = "zip of batched datasets (zip the datasets before batch)";
        return b;
      }
    }
    return {};
  }

 protected:
  StreamPtr open_stream(PassKey key) const override {
    std::vector<StreamPtr> streams;
    for (const auto& in : inputs_) streams.push_back(in->stream(key));
    return std::make_unique<ZipStream>(std::move(streams));
  }

 private:
  std::vector<NodePtr> inputs_;
};

}  // namespace

NodePtr make_zip(std::vector<NodePtr> inputs) {
  TNT_CHECK(!inputs.empty(), "zip: no datasets given: pass at least one");
  return std::make_shared<ZipNode>(std::move(inputs));
}

}  // namespace tnt::data::detail
