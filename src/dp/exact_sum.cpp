#include "dp/exact_sum.h"

#include <cmath>

#include <torch/torch.h>

#include <tarantella/base/error.h>

namespace tnt::dp {
namespace {

// The exponent e of a tensor whose parts are below `largest` in magnitude:
// every part, scaled by 2^-e, is an integer of at most 2^62 / (P + 1), so P
// of them add up without overflow.
int fixed_point_exponent(double largest, std::int64_t total_parts) {
  if (!(largest > 0)) return 0;  // all zero
  int k = 0;
  std::frexp(largest, &k);  // largest < 2^k
  int headroom = 0;
  while ((std::int64_t{1} << headroom) < total_parts + 1) ++headroom;
  return k + headroom - 62;
}

}  // namespace

std::vector<torch::Tensor> exact_sum(const comm::ProcessGroup& group,
                                     const std::vector<std::vector<torch::Tensor>>& parts,
                                     const std::vector<torch::Tensor>& like,
                                     std::int64_t total_parts) {
  const std::size_t n = like.size();
  for (const auto& part : parts) {
    TNT_CHECK(part.size() == n, "exact_sum: a part has ", part.size(), " tensors, expected ", n);
  }
  // 1. Every tensor's largest magnitude over all parts of all ranks, and
  // whether any value is not finite (such a tensor's sum is NaN everywhere,
  // as a float sum would be; every rank still runs both collectives).
  torch::Tensor largest = torch::zeros({2 * static_cast<std::int64_t>(n)}, torch::kFloat64);
  auto* l = largest.data_ptr<double>();
  for (const auto& part : parts) {
    for (std::size_t t = 0; t < n; ++t) {
      if (!part[t].is_floating_point() || part[t].numel() == 0) continue;
      const double m = part[t].abs().max().to(torch::kFloat64).item<double>();
      if (std::isfinite(m)) {
        l[t] = std::max(l[t], m);
      } else {
        l[n + t] = 1;
      }
    }
  }
  group.allreduce(largest, comm::ReduceOp::Max);
  l = largest.data_ptr<double>();
  std::vector<int> exponent(n, 0);
  std::vector<bool> finite(n, true);
  for (std::size_t t = 0; t < n; ++t) {
    exponent[t] = fixed_point_exponent(l[t], total_parts);
    finite[t] = l[n + t] == 0;
  }
  // 2. This rank's integer sums, packed into one buffer; summed over ranks.
  std::vector<std::int64_t> offsets(n + 1, 0);
  for (std::size_t t = 0; t < n; ++t) offsets[t + 1] = offsets[t] + like[t].numel();
  torch::Tensor packed = torch::zeros({offsets[n]}, torch::kInt64);
  for (std::size_t t = 0; t < n; ++t) {
    torch::Tensor slot = packed.narrow(0, offsets[t], like[t].numel());
    const double scale = std::ldexp(1.0, -exponent[t]);
    for (const auto& part : parts) {
      const torch::Tensor x = part[t].detach().reshape({-1}).cpu();
      if (!finite[t]) continue;
      if (x.is_floating_point()) {
        slot.add_(x.to(torch::kFloat64).mul(scale).round().to(torch::kInt64));
      } else {
        slot.add_(x.to(torch::kInt64));
      }
    }
  }
  group.allreduce(packed, comm::ReduceOp::Sum);
  // 3. Back to values: integers times 2^e.
  std::vector<torch::Tensor> sums;
  for (std::size_t t = 0; t < n; ++t) {
    torch::Tensor slot = packed.narrow(0, offsets[t], like[t].numel()).reshape(like[t].sizes());
    if (!finite[t]) {
      sums.push_back(torch::full(like[t].sizes(), std::nan(""), torch::kFloat64));
    } else if (like[t].is_floating_point()) {
      sums.push_back(slot.to(torch::kFloat64).mul(std::ldexp(1.0, exponent[t])));
    } else {
      sums.push_back(slot.clone());
    }
  }
  return sums;
}

}  // namespace tnt::dp
