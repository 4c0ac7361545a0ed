// repeat: pass r of the input is opened with child_key(key, r), so a shuffle
// below draws a new order for every repetition, still a pure function of the
// epoch. With random access, element i is element i mod n of pass i / n.
#include <map>

#include <tarantella/base/argument_error.h>
#include <tarantella/base/error.h>

#include "data/nodes/index_runs.h"
#include "data/pipeline/nodes.h"

namespace tnt::data::detail {
namespace {

class RepeatView final : public Indexed {
 public:
  RepeatView(NodePtr input, PassKey key, std::int64_t count, std::int64_t n)
      : input_(std::move(input)), key_(key), count_(count), n_(n) {}
  std::int64_t size() const override {
    if (n_ == 0) return 0;
    return count_ < 0 ? kInfiniteCardinality : n_ * count_;
  }
  Element get(std::int64_t index) override { return pass(index / n_).get(index % n_); }
  std::vector<Element> get_many(const std::vector<std::int64_t>& indices) override {
    return get_many_in_runs(
        indices, [this](std::int64_t i) { return locate(i); },
        [this](std::int64_t p) -> Indexed& { return pass(p); });
  }
  Element gather(const std::vector<std::int64_t>& indices) override {
    return gather_in_runs(
        indices, [this](std::int64_t i) { return locate(i); },
        [this](std::int64_t p) -> Indexed& { return pass(p); });
  }
  std::int64_t global_size(std::int64_t index) override {
    return pass(index / n_).global_size(index % n_);
  }

 private:
  Location locate(std::int64_t i) const { return Location{i / n_, i % n_}; }
  // Views of the two most recent passes are kept (a batch may straddle two).
  Indexed& pass(std::int64_t p) {
    auto it = passes_.find(p);
    if (it == passes_.end()) {
      if (passes_.size() >= 2) passes_.erase(passes_.begin());
      it = passes_.emplace(p, input_->indexed(child_key(key_, p))).first;
    }
    return *it->second;
  }
  NodePtr input_;
  PassKey key_;
  std::int64_t count_, n_;
  std::map<std::int64_t, IndexedPtr> passes_;
};

class RepeatStream final : public Stream {
 public:
  RepeatStream(NodePtr input, PassKey key, std::int64_t count)
      : input_(std::move(input)), key_(key), count_(count) {}
  std::optional<Deferred> next_deferred() override {
    for (;;) {
      if (count_ >= 0 && pass_ >= count_) return std::nullopt;
      if (!current_) {
        current_ = input_->stream(child_key(key_, pass_));
        produced_ = false;
      }
      if (auto d = current_->next_deferred()) {
        produced_ = true;
        return d;
      }
      current_.reset();
      ++pass_;
      if (!produced_) return std::nullopt;  // an empty input would repeat forever
    }
  }
  std::int64_t global_size() const override {
    return current_ ? current_->global_size() : kNotSplit;
  }

 private:
  NodePtr input_;
  PassKey key_;
  std::int64_t count_;
  std::int64_t pass_ = 0;
  bool produced_ = false;
  StreamPtr current_;
};

class RepeatNode final : public Node {
 public:
  RepeatNode(NodePtr input, std::int64_t count) : input_(std::move(input)), count_(count) {}
  std::string name() const override {
    return count_ < 0 ? "repeat" : "repeat(" + std::to_string(count_) + ")";
  }
  std::vector<NodePtr> inputs() const override { return {input_}; }
  std::int64_t cardinality() const override {
    const std::int64_t n = input_->cardinality();
    if (count_ == 0 || n == 0) return 0;
    if (count_ < 0) return n == kUnknownCardinality ? n : kInfiniteCardinality;
    return n < 0 ? n : n * count_;
  }
  bool is_indexed() const override { return input_->is_indexed() && input_->cardinality() >= 0; }
  IndexedPtr indexed(PassKey key) const override {
    return std::make_shared<RepeatView>(input_, key, count_, input_->cardinality());
  }
  Batching batching() const override { return pass_through_batching(input_); }
  NodePtr split(const SplitSpec& spec) const override {
    return std::make_shared<RepeatNode>(input_->split(spec), count_);
  }

 protected:
  StreamPtr open_stream(PassKey key) const override {
    return std::make_unique<RepeatStream>(input_, key, count_);
  }

 private:
  NodePtr input_;
  std::int64_t count_;
};

}  // namespace

NodePtr make_repeat(NodePtr input, std::int64_t count) {
  TNT_CHECK_ARG(count >= -1, "repeat: count ", count, " is invalid: use -1 (forever) or a count >= 0");
  return std::make_shared<RepeatNode>(std::move(input), count);
}

}  // namespace tnt::data::detail
