// Private: sums whose result does not depend on how the summands are spread
// over ranks or in which order MPI adds them (deterministic training, issue
// 16). Each summand ("part", e.g. the gradient of one chunk of a global
// batch) is turned into 64-bit fixed point with an exponent per tensor that
// all ranks agree on (from the largest magnitude of any part, on any rank),
// and the integers are summed: integer addition is exact and associative,
// so any grouping gives the same bits.
//
// Precision: with P parts in all, a tensor whose largest |value| is below
// 2^k is represented to 2^(k + ceil(log2(P + 1)) - 62): about 2^-58 of the
// largest value for a few parts, far below float32's rounding. Integer
// tensors (e.g. BatchNorm's num_batches_tracked) are summed as they are.
#pragma once

#include <cstdint>
#include <vector>

#include <torch/types.h>

#include <tarantella/comm/process_group.h>

namespace tnt::dp {

/// The sum, over this rank's `parts` and every other rank's, of each tensor:
/// parts[j][t] is part j's tensor t (shapes and dtypes as `like[t]`; a rank
/// may have no parts). `total_parts` is the number of parts of all ranks
/// together (the same on every rank). Floating tensors come back as float64,
/// integer ones as int64, identical bits on every rank whatever the split;
/// a tensor with a NaN or infinite value in any part sums to NaN.
/// Collective over `group`: two allreduces (maxima, then the integers).
///
/// Example:
///   auto sums = exact_sum(group, {{g0_a, g0_b}, {g1_a, g1_b}}, {a, b}, 4);
std::vector<torch::Tensor> exact_sum(const comm::ProcessGroup& group,
                                     const std::vector<std::vector<torch::Tensor>>& parts,
                                     const std::vector<torch::Tensor>& like,
                                     std::int64_t total_parts);

}  // namespace tnt::dp
