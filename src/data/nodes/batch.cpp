// batch and padded_batch: batch k holds input samples k*B .. k*B+L-1. Over a
// random-access input, a batch is one request for exactly those indices (a
// single gather from a tensor source); otherwise samples are read in order.
#include "data/pipeline/batcher.h"
#include "data/pipeline/nodes.h"

namespace tnt::data::detail {
namespace {

class BatchView final : public Indexed {
 public:
  BatchView(IndexedPtr input, std::shared_ptr<const Batcher> batcher)
      : input_(std::move(input)), batcher_(std::move(batcher)) {}
  std::int64_t size() const override { return batcher_->count(input_->size()); }
  Element get(std::int64_t k) override {
    const std::int64_t length = batcher_->length(k, input_->size());
    return batcher_->from_indexed(*input_, batch_indices(k * batcher_->size(), length));
  }

 private:
  IndexedPtr input_;
  std::shared_ptr<const Batcher> batcher_;
};

class BatchStream final : public EagerStream {
 public:
  BatchStream(StreamPtr input, std::shared_ptr<const Batcher> batcher)
      : input_(std::move(input)), batcher_(std::move(batcher)) {}
  std::optional<Element> next() override {
    auto samples = batcher_->draw<Element>([this] { return input_->next(); });
    if (!samples) return std::nullopt;
    return batcher_->from_samples(*samples);
  }
  std::int64_t skip(std::int64_t n) override { return batcher_->skip(*input_, n); }

 private:
  StreamPtr input_;
  std::shared_ptr<const Batcher> batcher_;
};

class BatchNode final : public Node {
 public:
  BatchNode(NodePtr input, std::shared_ptr<const Batcher> batcher)
      : input_(std::move(input)), batcher_(std::move(batcher)) {}
  std::string name() const override { return batcher_->name(); }
  std::vector<NodePtr> inputs() const override { return {input_}; }
  std::int64_t cardinality() const override { return batcher_->count(input_->cardinality()); }
  bool is_indexed() const override { return input_->is_indexed(); }
  IndexedPtr indexed(PassKey key) const override {
    return std::make_shared<BatchView>(input_->indexed(key), batcher_);
  }
  Batching batching() const override {
    Batching b;
    b.batch_size = batcher_->size();
    b.kind = Batching::Kind::Splittable;
    return b;
  }
  NodePtr split(const SplitSpec& spec) const override {
    return make_micro_batch(input_, batcher_, spec);
  }

 protected:
  StreamPtr open_stream(PassKey key) const override {
    return std::make_unique<BatchStream>(input_->stream(key), batcher_);
  }

 private:
  NodePtr input_;
  std::shared_ptr<const Batcher> batcher_;
};

}  // namespace

NodePtr make_batch(NodePtr input, std::shared_ptr<const Batcher> batcher) {
  return std::make_shared<BatchNode>(std::move(input), std::move(batcher));
}

}  // namespace tnt::data::detail
