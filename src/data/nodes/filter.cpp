// filter: keeps the elements a predicate accepts. Its output positions depend
// on sample content, so it is sequential (no random access) and it computes
// every sample it reads; nodes above it stay lazy (see node.h). After batch
// it cannot be distributed: its verdict on a global batch depends on samples
// of other ranks, so distribute() refuses it and names the rewrites.
#include <tarantella/base/error.h>

#include "data/pipeline/element_ops.h"
#include "data/pipeline/nodes.h"

namespace tnt::data::detail {
namespace {

class FilterStream final : public EagerStream {
 public:
  FilterStream(StreamPtr input, std::shared_ptr<const FilterPredicate> predicate)
      : input_(std::move(input)), predicate_(std::move(predicate)) {}
  std::optional<Element> next() override {
    while (auto e = input_->next()) {
      // A dropped sample keeps its position (batches are made of positions)
      // and never reaches the predicate.
      if (is_dropped(*e) || (*predicate_)(*e)) return e;
    }
    return std::nullopt;
  }

 private:
  StreamPtr input_;
  std::shared_ptr<const FilterPredicate> predicate_;
};

class FilterNode final : public Node {
 public:
  FilterNode(NodePtr input, std::shared_ptr<const FilterPredicate> predicate)
      : input_(std::move(input)), predicate_(std::move(predicate)) {}
  std::string name() const override { return "filter"; }
  std::vector<NodePtr> inputs() const override { return {input_}; }
  std::int64_t cardinality() const override {
    return input_->cardinality() == 0 ? 0 : kUnknownCardinality;
  }
  Batching batching() const override {
    return blocking_batching(input_,
                             "filter after batch (a filter of whole batches would need every "
                             "rank to compute every batch: filter the samples before batch, "
                             ".filter(p).batch(B); to drop a short last batch use "
                             "batch(B, /*drop_remainder=*/true))");
  }

 protected:
  StreamPtr open_stream(PassKey key) const override {
    return std::make_unique<FilterStream>(input_->stream(key), predicate_);
  }

 private:
  NodePtr input_;
  std::shared_ptr<const FilterPredicate> predicate_;
};

}  // namespace

NodePtr make_filter(NodePtr input, FilterPredicate predicate) {
  TNT_CHECK(predicate, "filter: the predicate is empty");
  return std::make_shared<FilterNode>(
      std::move(input), std::make_shared<const FilterPredicate>(std::move(predicate)));
}

}  // namespace tnt::data::detail
