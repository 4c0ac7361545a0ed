#include "data/pipeline/node.h"

#include <algorithm>

#include <tarantella/base/error.h>

#include "data/pipeline/element_ops.h"

namespace tnt::data::detail {

std::uint64_t mix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

PassKey epoch_key(std::int64_t epoch) { return static_cast<PassKey>(epoch); }

PassKey child_key(PassKey key, std::int64_t pass) {
  return mix64(key ^ mix64(static_cast<std::uint64_t>(pass) + 0x5bd1e995ULL));
}

Element Deferred::force() const {
  if (!value_) value_ = compute_();
  return *value_;
}

std::vector<Element> Indexed::get_many(const std::vector<std::int64_t>& indices) {
  std::vector<Element> out;
  out.reserve(indices.size());
  for (std::int64_t i : indices) out.push_back(get(i));
  return out;
}

Element Indexed::gather(const std::vector<std::int64_t>& indices) {
  return stack_elements(get_many(indices), "batch");
}

std::optional<Element> Stream::next() {
  auto d = next_deferred();
  if (!d) return std::nullopt;
  return d->force();
}

std::int64_t Stream::skip(std::int64_t n) {
  std::int64_t done = 0;
  while (done < n && next_deferred()) ++done;
  return done;
}

std::optional<Deferred> EagerStream::next_deferred() {
  auto e = next();
  if (!e) return std::nullopt;
  return Deferred(std::move(*e));
}

namespace {

// Streams a view in index order; elements are deferred reads of the view.
class IndexedStream final : public Stream {
 public:
  explicit IndexedStream(IndexedPtr view) : view_(std::move(view)), size_(view_->size()) {}

  std::optional<Deferred> next_deferred() override {
    if (at_end()) return std::nullopt;
    return Deferred([view = view_, i = position_++] { return view->get(i); });
  }
  std::optional<Element> next() override {
    if (at_end()) return std::nullopt;
    return view_->get(position_++);
  }
  std::int64_t skip(std::int64_t n) override {
    std::int64_t done = std::max<std::int64_t>(0, n);
    if (size_ != kInfiniteCardinality) done = std::min(done, std::max<std::int64_t>(0, size_ - position_));
    position_ += done;
    return done;
  }
  std::int64_t global_size() const override { return view_->global_size(position_ - 1); }

 private:
  bool at_end() const { return size_ != kInfiniteCardinality && position_ >= size_; }

  IndexedPtr view_;
  std::int64_t size_;
  std::int64_t position_ = 0;
};

}  // namespace

StreamPtr stream_over(IndexedPtr view) { return std::make_unique<IndexedStream>(std::move(view)); }

IndexedPtr Node::indexed(PassKey) const {
  tnt::detail::throw_error(
      tnt::detail::concat("internal error: ", name(), " offers no random access"));
}

bool Node::streams_itself() const {
  for (const auto& input : inputs()) {
    if (input->streams_itself()) return true;
  }
  return false;
}

StreamPtr Node::stream(PassKey key) const {
  if (is_indexed() && !streams_itself()) return stream_over(indexed(key));
  return open_stream(key);
}

StreamPtr Node::open_stream(PassKey) const {
  tnt::detail::throw_error(tnt::detail::concat("internal error: ", name(), " has no stream"));
}

NodePtr Node::split(const SplitSpec&) const {
  tnt::detail::throw_error(
      tnt::detail::concat("internal error: ", name(), " cannot be split into micro-batches"));
}

void Node::skip_counters(std::vector<SkipCounter>& out) const {
  for (const auto& in : inputs()) in->skip_counters(out);
}

namespace {

// Each source once, though a pipeline may read it twice (zip, concatenate).
std::vector<SkipCounter> unique_skip_counters(const NodePtr& node) {
  std::vector<SkipCounter> counters;
  node->skip_counters(counters);
  std::sort(counters.begin(), counters.end());
  counters.erase(std::unique(counters.begin(), counters.end()), counters.end());
  return counters;
}

}  // namespace

bool may_drop_samples(const NodePtr& node) { return !unique_skip_counters(node).empty(); }

std::int64_t samples_dropped(const NodePtr& node) {
  std::int64_t total = 0;
  for (const auto& c : unique_skip_counters(node)) total += c->load();
  return total;
}

std::string describe(const NodePtr& node) {
  const auto inputs = node->inputs();
  if (inputs.empty()) return node->name();
  if (inputs.size() == 1) return describe(inputs.front()) + " -> " + node->name();
  std::string text = "[";
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    text += (i ? ", " : "") + describe(inputs[i]);
  }
  return text + "] -> " + node->name();
}

Batching pass_through_batching(const NodePtr& input) { return input->batching(); }

Batching blocking_batching(const NodePtr& input, const std::string& node) {
  Batching b = input->batching();
  if (b.kind == Batching::Kind::Splittable) {
    b.kind = Batching::Kind::Blocked;
    b.blocker = node;
  }
  return b;
}

}  // namespace tnt::data::detail
