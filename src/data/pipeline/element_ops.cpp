#include "data/pipeline/element_ops.h"

#include <algorithm>
#include <sstream>

#include <torch/torch.h>

#include <tarantella/base/error.h>

namespace tnt::data::detail {

std::string shape_text(const torch::Tensor& t) {
  std::ostringstream out;
  out << t.sizes();
  return out.str();
}

std::vector<Element> kept_samples(const std::vector<Element>& samples) {
  std::vector<Element> kept;
  kept.reserve(samples.size());
  for (const auto& s : samples) {
    if (!is_dropped(s)) kept.push_back(s);
  }
  return kept;
}

Element stack_elements(const std::vector<Element>& all, const std::string& who,
                       const CollateInto& into) {
  TNT_CHECK(!all.empty(), who, ": internal error, nothing to stack");
  const bool any_dropped = std::any_of(all.begin(), all.end(), is_dropped);
  const std::vector<Element> kept = any_dropped ? kept_samples(all) : std::vector<Element>();
  const std::vector<Element>& samples = any_dropped ? kept : all;
  if (samples.empty()) return {};
  const Element& first = samples.front();
  for (std::size_t i = 1; i < samples.size(); ++i) {
    const Element& s = samples[i];
    TNT_CHECK(s.size() == first.size(), who, ": sample ", i, " of the batch has ", s.size(),
              " tensors but sample 0 has ", first.size(),
              ": every element must have the same number of tensors");
    for (std::size_t c = 0; c < s.size(); ++c) {
      TNT_CHECK(s[c].sizes() == first[c].sizes() && s[c].dtype() == first[c].dtype(), who,
                ": tensor ", c, " of sample ", i, " has shape ", shape_text(s[c]), " and dtype ",
                s[c].dtype(), " but sample 0 has ", shape_text(first[c]), " and ", first[c].dtype(),
                ": use padded_batch for samples of different shapes");
    }
  }
  Element out(first.size());
  std::vector<torch::Tensor> column(samples.size());
  for (std::size_t c = 0; c < first.size(); ++c) {
    for (std::size_t i = 0; i < samples.size(); ++i) column[i] = samples[i][c];
    if (into) {
      std::vector<std::int64_t> sizes = first[c].sizes().vec();
      sizes.insert(sizes.begin(), static_cast<std::int64_t>(samples.size()));
      out[c] = into(sizes, first[c].options());
      torch::stack_out(out[c], column);  // the one copy, straight into place
    } else {
      out[c] = torch::stack(column);
    }
  }
  return out;
}

Element concat_elements(const std::vector<Element>& all) {
  TNT_CHECK(!all.empty(), "internal error: nothing to concatenate");
  const std::vector<Element> batches = kept_samples(all);
  if (batches.empty()) return {};
  if (batches.size() == 1) return batches.front();
  Element out(batches.front().size());
  std::vector<torch::Tensor> column(batches.size());
  for (std::size_t c = 0; c < out.size(); ++c) {
    for (std::size_t i = 0; i < batches.size(); ++i) column[i] = batches[i][c];
    out[c] = torch::cat(column);
  }
  return out;
}

std::int64_t row_count(const Element& batch, const std::string& who) {
  TNT_CHECK(!batch.empty(), who, ": the element has no tensors, so it has no rows");
  std::int64_t rows = -1;
  for (std::size_t c = 0; c < batch.size(); ++c) {
    TNT_CHECK(batch[c].dim() > 0, who, ": tensor ", c, " is a scalar, so the element cannot be ",
              "split into rows: give every tensor a first (batch) dimension");
    if (c == 0) rows = batch[c].size(0);
    TNT_CHECK(batch[c].size(0) == rows, who, ": tensor ", c, " has ", batch[c].size(0),
              " rows but tensor 0 has ", rows, ": all tensors need the same first dimension");
  }
  return rows;
}

std::vector<Element> unstack_element(const Element& batch, const std::string& who) {
  const std::int64_t rows = row_count(batch, who);
  std::vector<Element> out(static_cast<std::size_t>(rows), Element(batch.size()));
  for (std::size_t c = 0; c < batch.size(); ++c) {
    for (std::int64_t i = 0; i < rows; ++i) out[static_cast<std::size_t>(i)][c] = batch[c][i];
  }
  return out;
}

Element empty_rows(const Element& batch) {
  Element out;
  out.reserve(batch.size());
  for (const auto& t : batch) {
    // A tensor of its own, not a view: a view would keep the whole batch's
    // storage (page-locked, with pin_memory) alive as long as it is kept.
    std::vector<std::int64_t> sizes = t.sizes().vec();
    sizes.at(0) = 0;
    out.push_back(torch::empty(sizes, t.options()));
  }
  return out;
}

torch::Tensor pinned_or_in_place(at::IntArrayRef sizes, const torch::TensorOptions& options) {
  if (options.device().is_cpu()) return torch::empty(sizes, options.pinned_memory(true));
  return torch::empty(sizes, options);
}

torch::Tensor pinned_dense(const torch::Tensor& t) {
  if (!t.defined() || !t.device().is_cpu()) return t;
  if (t.is_pinned() && t.is_non_overlapping_and_dense()) return t;
  return torch::empty(t.sizes(), t.options().pinned_memory(true)).copy_(t);
}

}  // namespace tnt::data::detail
