// unbatch: splits every element along dimension 0 into its rows. How many
// rows an element has is only known once it is computed, so unbatch is
// sequential, like filter.
#include <deque>

#include "data/pipeline/element_ops.h"
#include "data/pipeline/nodes.h"

namespace tnt::data::detail {
namespace {

class UnbatchStream final : public EagerStream {
 public:
  explicit UnbatchStream(StreamPtr input) : input_(std::move(input)) {}
  std::optional<Element> next() override {
    while (rows_.empty()) {
      auto batch = input_->next();
      if (!batch) return std::nullopt;
      if (is_dropped(*batch)) continue;  // a batch of dropped samples only
      for (auto& row : unstack_element(*batch, "unbatch")) rows_.push_back(std::move(row));
    }
    Element row = std::move(rows_.front());
    rows_.pop_front();
    return row;
  }

 private:
  StreamPtr input_;
  std::deque<Element> rows_;
};

class UnbatchNode final : public Node {
 public:
  explicit UnbatchNode(NodePtr input) : input_(std::move(input)) {}
  std::string name() const override { return "unbatch"; }
  std::vector<NodePtr> inputs() const override { return {input_}; }
  std::int64_t cardinality() const override {
    return input_->cardinality() == 0 ? 0 : kUnknownCardinality;
  }
  Batching batching() const override { return {}; }  // rows are samples again

 protected:
  StreamPtr open_stream(PassKey key) const override {
    return std::make_unique<UnbatchStream>(input_->stream(key));
  }

 private:
  NodePtr input_;
};

}  // namespace

NodePtr make_unbatch(NodePtr input) { return std::make_shared<UnbatchNode>(std::move(input)); }

}  // namespace tnt::data::detail
