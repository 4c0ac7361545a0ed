#include "data/pipeline/batcher.h"

#include <algorithm>
#include <numeric>

#include <torch/torch.h>

#include <tarantella/base/argument_error.h>
#include <tarantella/base/error.h>

#include "data/pipeline/element_ops.h"

namespace tnt::data::detail {

std::int64_t Batcher::count(std::int64_t n) const {
  if (n < 0) return n;  // infinite or unknown stays so
  return drop_remainder_ ? n / size_ : (n + size_ - 1) / size_;
}

std::int64_t Batcher::length(std::int64_t k, std::int64_t n) const {
  if (n == kInfiniteCardinality) return size_;
  return std::min(size_, n - k * size_);
}

std::int64_t Batcher::skip(Stream& input, std::int64_t n) const {
  std::int64_t done = 0;
  for (; done < n; ++done) {
    if (!draw<Deferred>([&input] { return input.next_deferred(); })) break;
  }
  return done;
}

std::vector<std::int64_t> batch_indices(std::int64_t first, std::int64_t count) {
  std::vector<std::int64_t> indices(static_cast<std::size_t>(count));
  std::iota(indices.begin(), indices.end(), first);
  return indices;
}

namespace {

std::string suffix(bool drop_remainder) { return drop_remainder ? ", drop_remainder)" : ")"; }

class StackingBatcher final : public Batcher {
 public:
  using Batcher::Batcher;
  std::string name() const override {
    return "batch(" + std::to_string(size()) + suffix(drop_remainder());
  }
  Element from_indexed(Indexed& input, const std::vector<std::int64_t>& indices,
                       const CollateInto& into) const override {
    // Into given memory: the samples one by one (a source's are views, no
    // copy), stacked in place; else the input's own gather.
    if (into) return stack_elements(input.get_many(indices), name(), into);
    return input.gather(indices);
  }
  Element from_samples(const std::vector<Element>& samples,
                       const CollateInto& into) const override {
    return stack_elements(samples, name(), into);
  }
};

class PaddingBatcher final : public Batcher {
 public:
  PaddingBatcher(std::int64_t size, const PaddingOptions& options)
      : Batcher(size, options.drop_remainder()), options_(options) {}
  std::string name() const override {
    return "padded_batch(" + std::to_string(size()) + suffix(drop_remainder());
  }
  Element from_indexed(Indexed& input, const std::vector<std::int64_t>& indices,
                       const CollateInto& into) const override {
    return from_samples(input.get_many(indices), into);
  }
  Element from_samples(const std::vector<Element>& all, const CollateInto& into) const override {
    const std::vector<Element> samples = kept_samples(all);  // without dropped ones
    if (samples.empty()) return {};
    const std::size_t tensors = samples.front().size();
    check_counts(samples, tensors);
    Element out(tensors);
    for (std::size_t c = 0; c < tensors; ++c) out[c] = pad_component(samples, c, into);
    return out;
  }
 private:
  void check_counts(const std::vector<Element>& samples, std::size_t tensors) const {
    for (std::size_t i = 0; i < samples.size(); ++i) {
      TNT_CHECK(samples[i].size() == tensors, name(), ": sample ", i, " has ", samples[i].size(),
                " tensors but sample 0 has ", tensors);
    }
    const auto& shapes = options_.padded_shapes();
    const auto& values = options_.padding_values();
    TNT_CHECK(shapes.empty() || shapes.size() == tensors, name(), ": ", shapes.size(),
              " padded shapes given for elements of ", tensors, " tensors: give one per tensor");
    TNT_CHECK(values.empty() || values.size() == tensors, name(), ": ", values.size(),
              " padding values given for elements of ", tensors, " tensors: give one per tensor");
  }

  // The target shape of tensor c: the padded shape, with -1 (or no padded
  // shapes) meaning the largest size in the batch.
  std::vector<std::int64_t> target_shape(const std::vector<Element>& samples, std::size_t c) const {
    const auto rank = samples.front()[c].dim();
    std::vector<std::int64_t> target(static_cast<std::size_t>(rank), 0);
    for (std::size_t i = 0; i < samples.size(); ++i) {
      const auto& t = samples[i][c];
      TNT_CHECK(t.dim() == rank, name(), ": tensor ", c, " of sample ", i, " has ", t.dim(),
                " dimensions but sample 0 has ", rank,
                ": padding needs the same number of dimensions");
      for (std::int64_t d = 0; d < rank; ++d) target[d] = std::max(target[d], t.size(d));
    }
    if (options_.padded_shapes().empty()) return target;
    const auto& fixed = options_.padded_shapes()[c];
    TNT_CHECK(static_cast<std::int64_t>(fixed.size()) == rank, name(), ": padded shape ", c,
              " has ", fixed.size(), " dimensions but the samples' tensor ", c, " has ", rank);
    for (std::int64_t d = 0; d < rank; ++d) {
      if (fixed[d] < 0) continue;
      TNT_CHECK(target[d] <= fixed[d], name(), ": tensor ", c, " has size ", target[d],
                " in dimension ", d, ", larger than its padded size ", fixed[d],
                ": raise the padded shape or use -1");
      target[d] = fixed[d];
    }
    return target;
  }

  torch::Tensor pad_component(const std::vector<Element>& samples, std::size_t c,
                              const CollateInto& into) const {
    std::vector<std::int64_t> shape = target_shape(samples, c);
    shape.insert(shape.begin(), static_cast<std::int64_t>(samples.size()));
    const double value = options_.padding_values().empty() ? 0.0 : options_.padding_values()[c];
    const auto& first = samples.front()[c];
    torch::Tensor out =
        into ? into(shape, first.options()).fill_(value) : torch::full(shape, value, first.options());
    for (std::size_t i = 0; i < samples.size(); ++i) {
      const auto& t = samples[i][c];
      TNT_CHECK(t.scalar_type() == first.scalar_type(), name(), ": tensor ", c, " of sample ", i,
                " has dtype ", t.dtype(), " but sample 0 has ", first.dtype());
      torch::Tensor slot = out[static_cast<std::int64_t>(i)];
      for (std::int64_t d = 0; d < t.dim(); ++d) slot = slot.narrow(d, 0, t.size(d));
      slot.copy_(t);
    }
    return out;
  }

  PaddingOptions options_;
};

}  // namespace

std::shared_ptr<const Batcher> make_stacking_batcher(std::int64_t size, bool drop_remainder) {
  TNT_CHECK_ARG(size >= 1, "batch: batch_size ", size, " is invalid: use at least 1");
  return std::make_shared<StackingBatcher>(size, drop_remainder);
}

std::shared_ptr<const Batcher> make_padding_batcher(std::int64_t size,
                                                    const PaddingOptions& options) {
  TNT_CHECK_ARG(size >= 1, "padded_batch: batch_size ", size, " is invalid: use at least 1");
  return std::make_shared<PaddingBatcher>(size, options);
}

}  // namespace tnt::data::detail
