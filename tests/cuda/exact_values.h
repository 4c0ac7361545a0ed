// The inputs of the NCCL backend's collective tests (nccl_backend_test.cpp),
// chosen so that every sum is exact in every dtype at any rank count up to 64,
// whatever order NCCL adds in; checked on the CPU by
// tests/unit/exact_values_test.cpp (every build, no GPU needed).
//
// Element i of rank r is m * 2^e with
//   m = (i + r) % 4 + 1            (1..4, shifted by the rank, so that ranks
//                                   differ and Max/Min mean something)
//   e = (i / 4) % exponent_count(dtype) (0..3; 0 for uint8)
// A sum over the first n ranks is 2^e * M with M = 10 * (n / 4) plus at most
// 9 (4 + 1 + 2 ... of the last n % 4 ranks): M <= 160 for n <= 64, and every
// partial sum (any subset of the ranks, so any order of addition) is 2^e
// times an integer no larger than that. bfloat16 holds integers up to 2^8 =
// 256 exactly (8 significant bits), float16 up to 2^11 and uint8 up to 255, so
// nothing is ever rounded: the largest value is 160 * 2^3 = 1280. (A ramp
// 1, 2, ..., 1000 times (r + 1) is exact at 1 rank only: bfloat16 rounds sums
// above 256 and float16 above 2048.)
#pragma once

#include <cstdint>
#include <vector>

#include <torch/torch.h>

namespace tnt_test {

inline int exponent_count(torch::ScalarType dtype) { return dtype == torch::kUInt8 ? 1 : 4; }

/// Rank `rank`'s input as exact int64 values (CPU).
inline torch::Tensor exact_input(std::int64_t count, int rank, torch::ScalarType dtype) {
  std::vector<std::int64_t> v(static_cast<std::size_t>(count));
  const std::int64_t k = exponent_count(dtype);
  for (std::int64_t i = 0; i < count; ++i) {
    v[static_cast<std::size_t>(i)] = ((i + rank) % 4 + 1) << ((i / 4) % k);
  }
  return torch::tensor(v, torch::kInt64);
}

enum class Combine { Sum, Max, Min };

/// What a reduction over ranks 0..n-1 gives, computed in int64 (exact), then
/// converted to `dtype` (exact too: see above).
inline torch::Tensor exact_result(std::int64_t count, int n, torch::ScalarType dtype,
                                  Combine how) {
  torch::Tensor out = exact_input(count, 0, dtype);
  for (int r = 1; r < n; ++r) {
    const torch::Tensor x = exact_input(count, r, dtype);
    out = how == Combine::Sum ? out + x : how == Combine::Max ? torch::maximum(out, x)
                                                              : torch::minimum(out, x);
  }
  return out.to(dtype);
}

}  // namespace tnt_test
