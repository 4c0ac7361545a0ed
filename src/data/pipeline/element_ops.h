// Whole-element helpers shared by the nodes: stacking samples into a batch
// (with errors that say which sample differs), and its inverses.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <tarantella/data/element.h>

namespace tnt::data::detail {

/// A dropped sample: an element with no tensors. An image source with
/// OnBadSample::skip hands one out for a file it cannot decode; map and zip
/// pass it on, batching leaves it out, iteration passes over it.
inline bool is_dropped(const Element& e) { return e.empty(); }

/// Allocates a batch tensor to collate into: (sizes, options of the samples).
using CollateInto = std::function<torch::Tensor(at::IntArrayRef, const torch::TensorOptions&)>;

/// Stacks samples (at least one) component-wise along a new dimension 0,
/// leaving dropped samples out (all dropped: a dropped batch). Samples with
/// different tensor counts or shapes are an error naming the first sample
/// that differs and `who` (e.g. "batch(64)").
Element stack_elements(const std::vector<Element>& samples, const std::string& who,
                       const CollateInto& into = nullptr);
/// Concatenates batches component-wise along dimension 0, leaving dropped
/// batches out.
Element concat_elements(const std::vector<Element>& batches);
/// Rows of a batch: element i is {t[i] for t}. All tensors need the same
/// size in dimension 0.
std::vector<Element> unstack_element(const Element& batch, const std::string& who);
/// The batch with no rows: every tensor's shape with size 0 in dimension 0
/// (new tensors: nothing of the batch's storage is kept).
Element empty_rows(const Element& batch);
/// pin_memory()'s collation target: page-locked memory for samples in host
/// memory; samples already on a device (a user's CUDA tensors) are collated
/// there, since stacking them into host memory is an error.
torch::Tensor pinned_or_in_place(at::IntArrayRef sizes, const torch::TensorOptions& options);
/// A host tensor ready for a copy to a GPU that does not block: `t` itself
/// when it is pinned and dense (a non-dense source would be copied through
/// a pageable temporary, which synchronises), else a pinned contiguous copy.
/// Tensors on a device pass through.
torch::Tensor pinned_dense(const torch::Tensor& t);
/// The samples that were not dropped.
std::vector<Element> kept_samples(const std::vector<Element>& samples);
/// "[2, 3]".
std::string shape_text(const torch::Tensor& t);
/// Number of rows of a batch (size of dimension 0 of its first tensor).
std::int64_t row_count(const Element& batch, const std::string& who);

}  // namespace tnt::data::detail
