// enumerate: prepends the element's position (start, start+1, ...) as an
// int64 scalar. After batch the position is the batch's: under distribution
// every rank's micro-batch k carries the k of its global batch, so enumerate
// splits like any node that acts on whole batches.
#include <torch/torch.h>

#include "data/pipeline/element_ops.h"
#include "data/pipeline/nodes.h"

namespace tnt::data::detail {
namespace {

Element with_counter(torch::Tensor counter, Element e) {
  if (is_dropped(e)) return e;  // stays dropped
  e.insert(e.begin(), std::move(counter));
  return e;
}

class EnumerateView final : public Indexed {
 public:
  EnumerateView(IndexedPtr input, std::int64_t start, bool may_drop)
      : input_(std::move(input)), start_(start), may_drop_(may_drop) {}
  std::int64_t size() const override { return input_->size(); }
  Element get(std::int64_t index) override {
    return with_counter(torch::scalar_tensor(start_ + index, torch::kInt64), input_->get(index));
  }
  std::vector<Element> get_many(const std::vector<std::int64_t>& indices) override {
    auto out = input_->get_many(indices);
    for (std::size_t i = 0; i < out.size(); ++i) {
      out[i] =
          with_counter(torch::scalar_tensor(start_ + indices[i], torch::kInt64), std::move(out[i]));
    }
    return out;
  }
  Element gather(const std::vector<std::int64_t>& indices) override {
    // The counters of dropped samples must go with them.
    if (may_drop_) return stack_elements(get_many(indices), "batch after enumerate");
    auto counters = torch::tensor(indices, torch::kInt64).add_(start_);
    return with_counter(std::move(counters), input_->gather(indices));
  }
  std::int64_t global_size(std::int64_t index) override { return input_->global_size(index); }

 private:
  IndexedPtr input_;
  std::int64_t start_;
  bool may_drop_;
};

class EnumerateStream final : public Stream {
 public:
  EnumerateStream(StreamPtr input, std::int64_t start) : input_(std::move(input)), next_(start) {}
  std::optional<Deferred> next_deferred() override {
    auto d = input_->next_deferred();
    if (!d) return std::nullopt;
    return Deferred([d = std::move(*d), i = next_++] {
      return with_counter(torch::scalar_tensor(i, torch::kInt64), d.force());
    });
  }
  std::int64_t global_size() const override { return input_->global_size(); }

 private:
  StreamPtr input_;
  std::int64_t next_;
};

class EnumerateNode final : public Node {
 public:
  EnumerateNode(NodePtr input, std::int64_t start) : input_(std::move(input)), start_(start) {}
  std::string name() const override { return "enumerate"; }
  std::vector<NodePtr> inputs() const override { return {input_}; }
  std::int64_t cardinality() const override { return input_->cardinality(); }
  bool is_indexed() const override { return input_->is_indexed(); }
  IndexedPtr indexed(PassKey key) const override {
    return std::make_shared<EnumerateView>(input_->indexed(key), start_, may_drop_samples(input_));
  }
  Batching batching() const override { return pass_through_batching(input_); }
  NodePtr split(const SplitSpec& spec) const override {
    return std::make_shared<EnumerateNode>(input_->split(spec), start_);
  }

 protected:
  StreamPtr open_stream(PassKey key) const override {
    return std::make_unique<EnumerateStream>(input_->stream(key), start_);
  }

 private:
  NodePtr input_;
  std::int64_t start_;
};

}  // namespace

NodePtr make_enumerate(NodePtr input, std::int64_t start) {
  return std::make_shared<EnumerateNode>(std::move(input), start);
}

}  // namespace tnt::data::detail
