// The micro-batch node: what a batch node becomes on one rank (see
// distribute.h for the design). Its views and streams tell each
// micro-batch's global batch size (L) through global_size(), beside the
// tensors. For global batch k of L samples it produces
// rows [lo, hi) of the micro-batch rule, assembled by the same Batcher as
// the serial batch (padded_batch: padded to the micro-batch's own longest
// sample), and it asks its input for those samples only:
//  * random-access input: one request for indices k*B+lo .. k*B+hi-1;
//  * sequential input: it draws the L samples of the batch as deferred
//    computations and forces rows lo..hi-1 only.
// A rank without rows (L < N, or every one of its samples dropped as bad)
// gets the batch with zero rows, shaped like its previous micro-batch; for
// its first one, one sample of the global batch is computed to learn the
// shapes (the first that is not dropped; if all are, the micro-batch is a
// dropped element, and so is every rank's: nothing of the batch is left).
#include <tarantella/base/error.h>

#include "data/pipeline/batcher.h"
#include "data/pipeline/element_ops.h"
#include "data/pipeline/nodes.h"

namespace tnt::data::detail {

std::pair<std::int64_t, std::int64_t> share_range(std::int64_t batch, int size, int rank,
                                                  std::int64_t granularity) {
  const std::int64_t g = std::max<std::int64_t>(granularity, 1);
  const std::int64_t units = (batch + g - 1) / g;
  const std::int64_t base = units / size;
  const std::int64_t extra = units % size;
  const std::int64_t begin = rank * base + std::min<std::int64_t>(rank, extra);
  const std::int64_t count = base + (rank < extra ? 1 : 0);
  return {std::min(begin * g, batch), std::min((begin + count) * g, batch)};
}

namespace {

// Shapes of the rank's empty micro-batches, learned from its last rows.
class EmptyShape {
 public:
  void remember(const Element& rows) { empty_ = empty_rows(rows); }
  template <typename ComputeOneSample>
  Element get(ComputeOneSample&& compute) {
    if (!empty_) {
      const Element one = compute();
      if (is_dropped(one)) return one;
      empty_ = empty_rows(one);
    }
    return *empty_;
  }

 private:
  std::optional<Element> empty_;
};

// The rank's micro-batch of a global batch of `length` samples: rows(lo, hi)
// assembles its rows, one_sample() gives any one sample of the global batch
// (only needed to shape a first empty micro-batch). Tagged with `length`.
template <typename Rows, typename OneSample>
Element micro_batch_of(std::int64_t length, const SplitSpec& spec, EmptyShape& empty, Rows&& rows,
                       OneSample&& one_sample) {
  const auto [lo, hi] = share_range(length, spec.size, spec.rank, spec.granularity);
  Element out;
  if (hi > lo) out = rows(lo, hi);
  if (!is_dropped(out)) {
    empty.remember(out);
  } else {  // no rows, or all of them dropped
    out = empty.get(one_sample);
  }
  return out;
}

class MicroBatchView final : public Indexed {
 public:
  MicroBatchView(IndexedPtr input, std::shared_ptr<const Batcher> batcher, SplitSpec spec)
      : input_(std::move(input)), batcher_(std::move(batcher)), spec_(spec) {}
  std::int64_t size() const override { return batcher_->count(input_->size()); }
  std::int64_t global_size(std::int64_t k) override { return batcher_->length(k, input_->size()); }
  Element get(std::int64_t k) override {
    const std::int64_t first = k * batcher_->size();
    const std::int64_t length = batcher_->length(k, input_->size());
    return micro_batch_of(
        length, spec_, empty_,
        [&](std::int64_t lo, std::int64_t hi) {
          return batcher_->from_indexed(*input_, batch_indices(first + lo, hi - lo),
                                        spec_.collate_into);
        },
        [&] {
          Element one;
          for (std::int64_t i = first; is_dropped(one) && i < first + length; ++i) {
            one = batcher_->from_indexed(*input_, {i});
          }
          return one;
        });
  }

 private:
  IndexedPtr input_;
  std::shared_ptr<const Batcher> batcher_;
  SplitSpec spec_;
  EmptyShape empty_;
};

class MicroBatchStream final : public EagerStream {
 public:
  MicroBatchStream(StreamPtr input, std::shared_ptr<const Batcher> batcher, SplitSpec spec)
      : input_(std::move(input)), batcher_(std::move(batcher)), spec_(spec) {}
  std::optional<Element> next() override {
    auto batch = batcher_->draw<Deferred>([this] { return input_->next_deferred(); });
    if (!batch) return std::nullopt;
    length_ = static_cast<std::int64_t>(batch->size());
    return micro_batch_of(
        length_, spec_, empty_,
        [&](std::int64_t lo, std::int64_t hi) {
          std::vector<Element> rows;
          for (std::int64_t i = lo; i < hi; ++i)
            rows.push_back((*batch)[static_cast<std::size_t>(i)].force());
          return batcher_->from_samples(rows, spec_.collate_into);
        },
        [&] {
          Element one;
          for (std::size_t i = 0; is_dropped(one) && i < batch->size(); ++i) {
            one = batcher_->from_samples({(*batch)[i].force()});
          }
          return one;
        });
  }
  std::int64_t skip(std::int64_t n) override { return batcher_->skip(*input_, n); }
  std::int64_t global_size() const override { return length_; }

 private:
  StreamPtr input_;
  std::shared_ptr<const Batcher> batcher_;
  SplitSpec spec_;
  EmptyShape empty_;
  std::int64_t length_ = kNotSplit;  // of the global batch handed out last
};

class MicroBatchNode final : public Node {
 public:
  MicroBatchNode(NodePtr input, std::shared_ptr<const Batcher> batcher, SplitSpec spec)
      : input_(std::move(input)), batcher_(std::move(batcher)), spec_(spec) {}
  std::string name() const override {
    return "micro_" + batcher_->name() + "[rank " + std::to_string(spec_.rank) + " of " +
           std::to_string(spec_.size) + "]";
  }
  std::vector<NodePtr> inputs() const override { return {input_}; }
  std::int64_t cardinality() const override { return batcher_->count(input_->cardinality()); }
  bool is_indexed() const override { return input_->is_indexed(); }
  // Random access whenever possible, even past a prefetch below: reading
  // only the rank's samples is the point of this node.
  bool streams_itself() const override { return false; }
  IndexedPtr indexed(PassKey key) const override {
    return std::make_shared<MicroBatchView>(input_->indexed(key), batcher_, spec_);
  }

 protected:
  StreamPtr open_stream(PassKey key) const override {
    return std::make_unique<MicroBatchStream>(input_->stream(key), batcher_, spec_);
  }

 private:
  NodePtr input_;
  std::shared_ptr<const Batcher> batcher_;
  SplitSpec spec_;
};

}  // namespace

NodePtr make_micro_batch(NodePtr input, std::shared_ptr<const Batcher> batcher,
                         const SplitSpec& spec) {
  return std::make_shared<MicroBatchNode>(std::move(input), std::move(batcher), spec);
}

}  // namespace tnt::data::detail
