// zip: element i is the tensors of element i of every input, concatenated
// into one tuple; ends with the shortest input. All inputs see the same pass
// key, so equal shuffles below them stay aligned.
//
// After batch (every input batched with the same size B) zip is split like
// any node acting on whole batches: each input becomes rank r's micro-batch
// node, and since all inputs split batch k by the same rule, rows [lo, hi)
// of every input line up. The zip's global size is its inputs', which must
// agree (a short last batch of one input only would pair batches of
// different lengths).
#include <tarantella/base/error.h>

#include "data/pipeline/element_ops.h"
#include "data/pipeline/nodes.h"

namespace tnt::data::detail {
namespace {

// Joins the inputs' elements. A sample dropped in one input drops the whole
// pair (never half of it).
Element join_parts(std::vector<Element> parts) {
  Element out;
  for (auto& p : parts) {
    if (is_dropped(p)) return {};
    for (auto& t : p) out.push_back(std::move(t));
  }
  return out;
}

// The global size the inputs agree on (a short last batch of one input only
// would pair batches of different lengths): `of(i)` is input i's.
template <typename Of>
std::int64_t agreed_global_size(std::size_t inputs, Of&& of) {
  const std::int64_t global = of(0);
  for (std::size_t i = 1; i < inputs; ++i) {
    const std::int64_t g = of(i);
    TNT_CHECK(g == global, "zip after batch: a global batch has ", global,
              " samples in dataset 0 of the zip but ", g, " in dataset ", i,
              ": zip datasets of the same length, batch them with drop_remainder, or zip "
              "before batch");
  }
  return global;
}

class ZipView final : public Indexed {
 public:
  ZipView(std::vector<IndexedPtr> inputs, bool may_drop)
      : inputs_(std::move(inputs)), may_drop_(may_drop) {
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
    return join_parts(std::move(parts));
  }
  std::vector<Element> get_many(const std::vector<std::int64_t>& indices) override {
    std::vector<std::vector<Element>> columns;
    for (auto& in : inputs_) columns.push_back(in->get_many(indices));
    std::vector<Element> out(indices.size());
    for (std::size_t i = 0; i < indices.size(); ++i) {
      std::vector<Element> parts;
      for (auto& column : columns) parts.push_back(std::move(column[i]));
      out[i] = join_parts(std::move(parts));
    }
    return out;
  }
  Element gather(const std::vector<std::int64_t>& indices) override {
    // Gathering each input on its own would misalign rows where one drops.
    if (may_drop_) return stack_elements(get_many(indices), "batch after zip");
    std::vector<Element> parts;
    for (auto& in : inputs_) parts.push_back(in->gather(indices));
    return join_parts(std::move(parts));
  }
  std::int64_t global_size(std::int64_t index) override {
    return agreed_global_size(inputs_.size(),
                              [&](std::size_t i) { return inputs_[i]->global_size(index); });
  }

 private:
  std::vector<IndexedPtr> inputs_;
  bool may_drop_;
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
      return join_parts(std::move(elements));
    });
  }
  std::int64_t global_size() const override {
    return agreed_global_size(inputs_.size(),
                              [&](std::size_t i) { return inputs_[i]->global_size(); });
  }

 private:
  std::vector<StreamPtr> inputs_;
};

class ZipNode final : public Node {
 public:
  explicit ZipNode(std::vector<NodePtr> inputs) : inputs_(std::move(inputs)) {
    for (const auto& in : inputs_) may_drop_ = may_drop_ || may_drop_samples(in);
  }
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
    return std::make_shared<ZipView>(std::move(views), may_drop_);
  }
  // Splittable when every input is batched with the same size.
  Batching batching() const override {
    const Batching first = inputs_.front()->batching();
    for (std::size_t i = 0; i < inputs_.size(); ++i) {
      const Batching b = inputs_[i]->batching();
      if (b.kind == Batching::Kind::Blocked) return b;
      if (b.kind == first.kind && b.batch_size == first.batch_size) continue;
      Batching out = b.kind == Batching::Kind::Samples ? first : b;
      out.kind = Batching::Kind::Blocked;
      out.blocker = first.kind != b.kind
                        ? "zip of a batched and an unbatched dataset (batch every dataset of "
                          "the zip with the same size, or zip before batch)"
                        : "zip of datasets batched with different sizes " +
                              std::to_string(first.batch_size) + " and " +
                              std::to_string(b.batch_size) +
                              " (batch them with the same size, or zip before batch)";
      return out;
    }
    return first;
  }
  NodePtr split(const SplitSpec& spec) const override {
    std::vector<NodePtr> split_inputs;
    for (const auto& in : inputs_) split_inputs.push_back(in->split(spec));
    return std::make_shared<ZipNode>(std::move(split_inputs));
  }

 protected:
  StreamPtr open_stream(PassKey key) const override {
    std::vector<StreamPtr> streams;
    for (const auto& in : inputs_) streams.push_back(in->stream(key));
    return std::make_unique<ZipStream>(std::move(streams));
  }

 private:
  std::vector<NodePtr> inputs_;
  bool may_drop_ = false;
};

}  // namespace

NodePtr make_zip(std::vector<NodePtr> inputs) {
  TNT_CHECK(!inputs.empty(), "zip: no datasets given: pass at least one");
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    TNT_CHECK(inputs[i]->batching().kind == Batching::Kind::Samples ||
                  !may_drop_samples(inputs[i]),
              "zip: dataset ", i, " is batched and may drop bad samples (an image source with ",
              "OnBadSample::skip), so its rows could pair with another dataset's rows of other ",
              "samples: zip before batch, or read the images with OnBadSample::raise");
  }
  return std::make_shared<ZipNode>(std::move(inputs));
}

}  // namespace tnt::data::detail
