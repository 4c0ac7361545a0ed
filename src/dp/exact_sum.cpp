#include "dp/exact_sum.h"

#include <cmath>
#include <limits>

#include <torch/torch.h>

#include <tarantella/base/error.h>

namespace tnt::dp {
namespace {

constexpr int kMantissaBits = 53;  // float64 holds integers below 2^53 exactly
constexpr int kRoomForGrowth = 8;  // bits between the largest value and the limit
constexpr int kMinimumBits = 30;   // the largest value keeps at least this many

// Bits needed for counts up to n: 2^bits >= n + 1.
int bits_for(std::int64_t n) {
  int bits = 0;
  while ((std::int64_t{1} << bits) < n + 1) ++bits;
  return bits;
}

// The exponent of a power of two at or above |x|: x < 2^k.
int ceil_log2(double x) {
  int k = 0;
  std::frexp(x, &k);
  return k;
}

// The largest bits a part's value may have so that `parts` of them (each
// rounded, so up to half a unit more) stay below 2^53.
int limit_bits(std::int64_t parts) { return kMantissaBits - 1 - bits_for(parts); }

constexpr double kRoundingShift = 0x1.8p52;

// sum[i] += round_half_even(x[i] * scale) for n values, in one pass; returns
// the largest |x[i]| and clears `finite` on a NaN or infinity. (v + 1.5*2^52)
// - 1.5*2^52 rounds v to the nearest integer, ties to even, for |v| < 2^51:
// exact when the exponents fit (finish() checks |v| < 2^51 before it uses a
// sum; a sum made with exponents that do not fit is thrown away).
template <typename T>
double add_rounded(const T* x, std::int64_t n, double scale, double* sum, bool& finite) {
  double largest = 0;
  bool bad = false;
  for (std::int64_t i = 0; i < n; ++i) {
    const double v = static_cast<double>(x[i]);
    const double a = std::fabs(v);
    bad |= !(a <= std::numeric_limits<double>::max());
    largest = a > largest ? a : largest;
    sum[i] += (v * scale + kRoundingShift) - kRoundingShift;
  }
  finite = !bad;
  return largest;
}

}  // namespace

ExactSum::ExactSum(const std::vector<torch::Tensor>& like) {
  for (const auto& t : like) like_.push_back(torch::empty(t.sizes(), t.options().device(torch::kCPU)));
  exponents_.assign(like_.size(), 0);
  proposed_.assign(like_.size(), 0);
}

void ExactSum::begin(const std::vector<int>& exponents) {
  TNT_CHECK(exponents.size() == like_.size(), "ExactSum: ", exponents.size(),
            " exponents for ", like_.size(), " tensors");
  exponents_ = exponents;
  for (std::size_t t = 0; t < like_.size(); ++t) {
    if (!like_[t].is_floating_point()) exponents_[t] = 0;
  }
  sums_.clear();
  for (const auto& t : like_) sums_.push_back(torch::zeros(t.sizes(), torch::kFloat64));
  largest_.assign(like_.size(), 0.0);
  finite_.assign(like_.size(), true);
}

void ExactSum::add(const std::vector<torch::Tensor>& part) {
  TNT_CHECK(part.size() == like_.size(), "ExactSum: a part has ", part.size(),
            " tensors, expected ", like_.size());
  TNT_CHECK(!sums_.empty(), "ExactSum::add() before begin()");
  for (std::size_t t = 0; t < part.size(); ++t) {
    if (!finite_[t] || part[t].numel() == 0) continue;
    const torch::Tensor x = part[t].detach().cpu().contiguous();
    const double scale = std::ldexp(1.0, -exponents_[t]);
    double m = 0;
    bool finite = true;
    if (x.scalar_type() == torch::kFloat32) {
      m = add_rounded(x.data_ptr<float>(), x.numel(), scale, sums_[t].data_ptr<double>(), finite);
    } else if (x.scalar_type() == torch::kFloat64) {
      m = add_rounded(x.data_ptr<double>(), x.numel(), scale, sums_[t].data_ptr<double>(), finite);
    } else {
      // Integers (exponent 0) and other float types: with tensor operations.
      const torch::Tensor d = x.to(torch::kFloat64).reshape(like_[t].sizes());
      m = d.abs().max().item<double>();
      finite = std::isfinite(m);
      if (finite) sums_[t].add_(d.mul(scale).round_());
    }
    if (!finite) {
      finite_[t] = false;
      continue;
    }
    largest_[t] = std::max(largest_[t], m);
  }
}

std::optional<std::vector<torch::Tensor>> ExactSum::finish(const comm::ProcessGroup& group,
                                                           std::int64_t total_parts,
                                                           const comm::ProcessGroup* agree) {
  TNT_CHECK(!sums_.empty(), "ExactSum::finish() before begin()");
  const std::size_t n = like_.size();
  torch::Tensor agreed = torch::zeros({2 * static_cast<std::int64_t>(n)}, torch::kFloat64);
  auto* a = agreed.data_ptr<double>();
  for (std::size_t t = 0; t < n; ++t) {
    a[t] = largest_[t];
    a[n + t] = finite_[t] ? 0.0 : 1.0;
  }
  group.allreduce(agreed, comm::ReduceOp::Max);
  a = agreed.data_ptr<double>();
  const int limit = limit_bits(total_parts);
  bool fits = true;
  for (std::size_t t = 0; t < n; ++t) {
    if (a[n + t] != 0 || !(a[t] > 0) || !like_[t].is_floating_point()) {
      proposed_[t] = 0;
      if (!like_[t].is_floating_point() && a[t] >= std::ldexp(1.0, limit)) {
        throw Error(detail::concat("deterministic training: an integer value ", a[t],
                                   " is too large to be summed exactly"));
      }
      continue;
    }
    const int bits = ceil_log2(a[t]) - exponents_[t];  // of the largest value, rounded
    if (bits > limit || bits < kMinimumBits) fits = false;
    proposed_[t] = ceil_log2(a[t]) - (limit - kRoomForGrowth);
  }
  if (agree != nullptr && agree->size() > 1) {
    torch::Tensor all_fit = torch::tensor({fits ? 1 : 0}, torch::kInt32);
    agree->allreduce(all_fit, comm::ReduceOp::Min);
    fits = all_fit.item<int>() != 0;  // host-only: a host tensor
  }
  if (!fits) return std::nullopt;
  std::vector<std::int64_t> offsets(n + 1, 0);
  for (std::size_t t = 0; t < n; ++t) offsets[t + 1] = offsets[t] + like_[t].numel();
  torch::Tensor packed = torch::empty({offsets[n]}, torch::kFloat64);
  for (std::size_t t = 0; t < n; ++t) {
    packed.narrow(0, offsets[t], like_[t].numel()).copy_(sums_[t].reshape({-1}));
  }
  group.allreduce(packed, comm::ReduceOp::Sum);  // integers below 2^53: exact in any order
  std::vector<torch::Tensor> out;
  for (std::size_t t = 0; t < n; ++t) {
    const torch::Tensor slot = packed.narrow(0, offsets[t], like_[t].numel()).reshape(like_[t].sizes());
    if (a[n + t] != 0) {
      out.push_back(torch::full(like_[t].sizes(), std::nan(""), torch::kFloat64));
    } else if (!like_[t].is_floating_point()) {
      out.push_back(slot.to(torch::kInt64));
    } else {
      out.push_back(slot.mul(std::ldexp(1.0, exponents_[t])));
    }
  }
  return out;
}

std::vector<torch::Tensor> exact_sum(const comm::ProcessGroup& group,
                                     const std::vector<std::vector<torch::Tensor>>& parts,
                                     const std::vector<torch::Tensor>& like,
                                     std::int64_t total_parts) {
  ExactSum sum(like);
  // First pass only learns the largest values (any exponents do); the second sums.
  sum.begin(std::vector<int>(like.size(), 0));
  for (const auto& part : parts) sum.add(part);
  if (auto sums = sum.finish(group, total_parts)) return *sums;
  const std::vector<int> exponents = sum.exponents();
  sum.begin(exponents);
  for (const auto& part : parts) sum.add(part);
  auto sums = sum.finish(group, total_parts);
  TNT_CHECK(sums.has_value(), "internal error: exact_sum's exponents do not fit");
  return *sums;
}

}  // namespace tnt::dp
