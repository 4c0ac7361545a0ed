// Private: sums whose result does not depend on how the summands are spread
// over ranks or in which order MPI adds them (deterministic mode,
// CompileOptions().deterministic(): the same bits at any rank count). Each
// summand ("part", e.g. the gradient of one chunk of a global batch) is
// rounded to a multiple of 2^e, with an exponent e per tensor that every
// rank uses, and the multiples are added as integers held in float64: as
// long as every partial sum stays below 2^53 in magnitude, each addition is
// exact, so any grouping and order — on a rank, and in MPI's allreduce —
// gives the same bits.
//
// The exponents. ExactSum is told them before the parts arrive (so that a
// part is converted and dropped at once, never stored), e.g. predicted from
// the previous step's largest values; finish() checks on every rank alike
// whether they fit this step's largest values (no sum can reach 2^53, and
// the largest value keeps at least 30 bits) and, if not, proposes ones that
// do — the caller then redoes the parts. fitting_exponents() gives
// exponents with 8 bits of room for growth: the largest value of a tensor
// is held to about 2^-(44 - log2 P) of itself for P parts in all, far below
// float32's rounding. Integer tensors (BatchNorm's num_batches_tracked) are
// summed as they are (exponent 0).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include <torch/types.h>

#include <tarantella/comm/process_group.h>

namespace tnt::dp {

class ExactSum {
 public:
  /// Tensors of the shapes and dtypes of a part's tensors.
  explicit ExactSum(const std::vector<torch::Tensor>& like);

  /// Starts a sum with these exponents (one per tensor).
  void begin(const std::vector<int>& exponents);
  /// Adds one part (tensors as `like`), rounded to the exponents.
  void add(const std::vector<torch::Tensor>& part);
  /// Collective over `group` (every rank, also one without parts): agrees on
  /// the largest values. When the exponents fit them, sums the parts of all
  /// ranks (`total_parts` together) and returns the sums, float64 (int64 for
  /// integer tensors), the same bits on every rank; a tensor with a value
  /// that is not finite sums to NaN. When they do not, returns nullopt and
  /// exponents() are ones that fit: begin() with them and add the parts again.
  /// `agree` (pipeline stages: the rank's pipeline, one rank of each stage,
  /// whose sums cover the rest of the model): the sums are taken only when
  /// the exponents fit on every rank of `agree` too, so that the whole model
  /// refits or none of it, as an unsplit model's single sum does.
  std::optional<std::vector<torch::Tensor>> finish(const comm::ProcessGroup& group,
                                                   std::int64_t total_parts,
                                                   const comm::ProcessGroup* agree = nullptr);
  /// Exponents that fit the largest values agreed by the last finish(),
  /// with room for growth: the prediction for the next sum.
  const std::vector<int>& exponents() const { return proposed_; }

 private:
  std::vector<torch::Tensor> like_;
  std::vector<int> exponents_, proposed_;
  std::vector<torch::Tensor> sums_;  // float64, integers times 2^-e
  std::vector<double> largest_;
  std::vector<bool> finite_;
};

/// The sum over this rank's `parts` and every other rank's, of each tensor
/// (parts[j][t] as like[t]; `total_parts` of all ranks together): ExactSum
/// with exponents from the parts' own largest values. Collective (three
/// allreduces). Example:
///   auto sums = exact_sum(group, {{g0_a, g0_b}, {g1_a, g1_b}}, {a, b}, 4);
std::vector<torch::Tensor> exact_sum(const comm::ProcessGroup& group,
                                     const std::vector<std::vector<torch::Tensor>>& parts,
                                     const std::vector<torch::Tensor>& like,
                                     std::int64_t total_parts);

}  // namespace tnt::dp
