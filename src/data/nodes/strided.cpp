// take, skip and shard are one selection by position: output element i is
// input element offset + i * stride, for at most `limit` elements. Skipped
// input elements are never computed (over a stream they are drawn as
// deferred computations and dropped).
#include <limits>

#include <tarantella/base/argument_error.h>
#include <tarantella/base/error.h>

#include "data/pipeline/nodes.h"

namespace tnt::data::detail {
namespace {

constexpr std::int64_t kNoLimit = -1;
constexpr std::int64_t kSkipAll = std::numeric_limits<std::int64_t>::max();

struct Selection {
  std::int64_t offset = 0;
  std::int64_t stride = 1;
  std::int64_t limit = kNoLimit;

  std::int64_t size_of(std::int64_t n) const {
    if (n == kUnknownCardinality) return limit == 0 ? 0 : n;
    if (n == kInfiniteCardinality) return limit >= 0 ? limit : n;
    const std::int64_t available = n > offset ? (n - offset + stride - 1) / stride : 0;
    return limit >= 0 ? std::min(available, limit) : available;
  }
  std::int64_t source(std::int64_t i) const { return offset + i * stride; }
};

class StridedView final : public Indexed {
 public:
  StridedView(IndexedPtr input, Selection selection)
      : input_(std::move(input)), selection_(selection), size_(selection.size_of(input_->size())) {}
  std::int64_t size() const override { return size_; }
  Element get(std::int64_t index) override { return input_->get(selection_.source(index)); }
  std::vector<Element> get_many(const std::vector<std::int64_t>& indices) override {
    return input_->get_many(sources(indices));
  }
  Element gather(const std::vector<std::int64_t>& indices) override {
    return input_->gather(sources(indices));
  }
  std::int64_t global_size(std::int64_t index) override {
    return input_->global_size(selection_.source(index));
  }

 private:
  std::vector<std::int64_t> sources(const std::vector<std::int64_t>& indices) const {
    std::vector<std::int64_t> out;
    out.reserve(indices.size());
    for (std::int64_t i : indices) out.push_back(selection_.source(i));
    return out;
  }
  IndexedPtr input_;
  Selection selection_;
  std::int64_t size_;
};

class StridedStream final : public Stream {
 public:
  StridedStream(StreamPtr input, Selection selection)
      : input_(std::move(input)), selection_(selection) {}
  std::optional<Deferred> next_deferred() override {
    if (selection_.limit >= 0 && produced_ >= selection_.limit) return std::nullopt;
    if (!drop(produced_ == 0 ? selection_.offset : selection_.stride - 1)) return std::nullopt;
    auto d = input_->next_deferred();
    if (d) ++produced_;
    return d;
  }
  std::int64_t global_size() const override { return input_->global_size(); }

 private:
  // Drops up to n input elements; false if the input ended.
  bool drop(std::int64_t n) {
    for (std::int64_t i = 0; i < n; ++i) {
      if (!input_->next_deferred()) return false;
    }
    return true;
  }
  StreamPtr input_;
  Selection selection_;
  std::int64_t produced_ = 0;
};

class StridedNode final : public Node {
 public:
  StridedNode(NodePtr input, Selection selection, std::string name)
      : input_(std::move(input)), selection_(selection), name_(std::move(name)) {}
  std::string name() const override { return name_; }
  std::vector<NodePtr> inputs() const override { return {input_}; }
  std::int64_t cardinality() const override { return selection_.size_of(input_->cardinality()); }
  bool is_indexed() const override { return input_->is_indexed(); }
  IndexedPtr indexed(PassKey key) const override {
    return std::make_shared<StridedView>(input_->indexed(key), selection_);
  }
  Batching batching() const override { return pass_through_batching(input_); }
  NodePtr split(const SplitSpec& spec) const override {
    return std::make_shared<StridedNode>(input_->split(spec), selection_, name_);
  }

 protected:
  StreamPtr open_stream(PassKey key) const override {
    return std::make_unique<StridedStream>(input_->stream(key), selection_);
  }

 private:
  NodePtr input_;
  Selection selection_;
  std::string name_;
};

}  // namespace

NodePtr make_take(NodePtr input, std::int64_t count) {
  TNT_CHECK_ARG(count >= -1, "take: count ", count, " is invalid: use -1 (all) or a count >= 0");
  Selection s;
  s.limit = count;
  return std::make_shared<StridedNode>(std::move(input), s, "take(" + std::to_string(count) + ")");
}

NodePtr make_skip(NodePtr input, std::int64_t count) {
  TNT_CHECK_ARG(count >= -1, "skip: count ", count, " is invalid: use -1 (all) or a count >= 0");
  TNT_CHECK_ARG(count >= 0 || input->cardinality() != kInfiniteCardinality,
            "skip(-1) of an infinite dataset would never end: skip a finite count");
  Selection s;
  s.offset = count < 0 ? kSkipAll : count;
  return std::make_shared<StridedNode>(std::move(input), s, "skip(" + std::to_string(count) + ")");
}

NodePtr make_shard(NodePtr input, std::int64_t num_shards, std::int64_t index) {
  TNT_CHECK_ARG(num_shards >= 1, "shard: num_shards ", num_shards, " is invalid: use at least 1");
  TNT_CHECK_ARG(index >= 0 && index < num_shards, "shard: index ", index, " is not in 0..",
            num_shards - 1, ": use e.g. shard(tnt::get_size(), tnt::get_rank())");
  Selection s;
  s.offset = index;
  s.stride = num_shards;
  return std::make_shared<StridedNode>(
      std::move(input), s,
      "shard(" + std::to_string(num_shards) + ", " + std::to_string(index) + ")");
}

}  // namespace tnt::data::detail
