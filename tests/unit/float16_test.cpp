// The vectorized float16/bfloat16 sums behind compressed gradients must give
// the same bits as the scalar reference (c10's conversions), on values that
// exercise rounding ties, subnormals, overflow to infinity, infinities and
// NaN, for lengths that leave a scalar tail.
#include "comm/float16.h"

#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

namespace {

using tnt::comm::detail::sum_bfloat16;
using tnt::comm::detail::sum_bfloat16_scalar;
using tnt::comm::detail::sum_float16;
using tnt::comm::detail::sum_float16_scalar;

template <typename T>
std::uint16_t bits_of(float v) {
  const T t(v);
  std::uint16_t b;
  std::memcpy(&b, &t, 2);
  return b;
}

template <typename T>
float value_of(std::uint16_t b) {
  T t;
  std::memcpy(&t, &b, 2);
  return static_cast<float>(t);
}

// Random bit patterns (every class of value) plus hand-picked hard cases.
template <typename T>
std::vector<std::uint16_t> operands(std::uint32_t seed, std::size_t n) {
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int> any(0, 0xFFFF);
  std::normal_distribution<float> gauss(0.0f, 1e-2f);
  std::vector<std::uint16_t> v(n);
  for (std::size_t i = 0; i < n; ++i) {
    v[i] = i % 3 == 0 ? static_cast<std::uint16_t>(any(gen)) : bits_of<T>(gauss(gen));
  }
  const float inf = std::numeric_limits<float>::infinity();
  const float special[] = {0.0f,      -0.0f,   1.0f,    1.0f + 1.0f / 1024, 65504.0f,
                           -65504.0f, inf,     -inf,    std::nanf(""),      6e-8f,
                           1e-40f,    3.0e38f, -3.0e38f};
  for (std::size_t i = 0; i < std::size(special) && i < n; ++i) v[i] = bits_of<T>(special[i]);
  return v;
}

template <typename T>
void expect_same(const std::vector<std::uint16_t>& vec, const std::vector<std::uint16_t>& ref) {
  ASSERT_EQ(vec.size(), ref.size());
  for (std::size_t i = 0; i < vec.size(); ++i) {
    const float a = value_of<T>(vec[i]), b = value_of<T>(ref[i]);
    if (std::isnan(b)) {
      EXPECT_TRUE(std::isnan(a)) << "element " << i << ": vector " << a << ", scalar NaN";
    } else {
      EXPECT_EQ(vec[i], ref[i]) << "element " << i << ": vector " << a << ", scalar " << b;
    }
  }
}

template <typename T>
void check(void (*fast)(const std::uint16_t*, std::uint16_t*, std::int64_t),
           void (*reference)(const std::uint16_t*, std::uint16_t*, std::int64_t)) {
  for (std::size_t n : {0, 1, 7, 8, 9, 1000, 4099}) {
    const auto a = operands<T>(1 + n, n);
    const auto b = operands<T>(1000 + n, n);
    auto fast_out = b, ref_out = b;
    fast(a.data(), fast_out.data(), static_cast<std::int64_t>(n));
    reference(a.data(), ref_out.data(), static_cast<std::int64_t>(n));
    expect_same<T>(fast_out, ref_out);
  }
}

TEST(Float16, Float16SumMatchesTheScalarReference) {
  check<c10::Half>(sum_float16, sum_float16_scalar);
}

TEST(Float16, BFloat16SumMatchesTheScalarReference) {
  check<c10::BFloat16>(sum_bfloat16, sum_bfloat16_scalar);
}

TEST(Float16, RoundsToNearestEvenAndOverflowsToInfinity) {
  // float16: 2048 + 1 is a tie between 2048 and 2050 -> even (2048); 2050 + 1
  // -> 2052; 65504 + 65504 -> inf.
  std::vector<std::uint16_t> in = {bits_of<c10::Half>(1), bits_of<c10::Half>(1),
                                   bits_of<c10::Half>(65504)};
  std::vector<std::uint16_t> io = {bits_of<c10::Half>(2048), bits_of<c10::Half>(2050),
                                   bits_of<c10::Half>(65504)};
  in.resize(11, bits_of<c10::Half>(0));  // long enough for the vector path
  io.resize(11, bits_of<c10::Half>(0));
  sum_float16(in.data(), io.data(), 11);
  EXPECT_EQ(value_of<c10::Half>(io[0]), 2048.0f);
  EXPECT_EQ(value_of<c10::Half>(io[1]), 2052.0f);
  EXPECT_TRUE(std::isinf(value_of<c10::Half>(io[2])));
  // bfloat16 keeps 8 significant bits: 256 + 1 ties -> 256, 258 + 1 -> 260.
  std::vector<std::uint16_t> bin(9, bits_of<c10::BFloat16>(1)), bio(9, bits_of<c10::BFloat16>(256));
  bio[1] = bits_of<c10::BFloat16>(258);
  sum_bfloat16(bin.data(), bio.data(), 9);
  EXPECT_EQ(value_of<c10::BFloat16>(bio[0]), 256.0f);
  EXPECT_EQ(value_of<c10::BFloat16>(bio[1]), 260.0f);
}

}  // namespace

namespace {

TEST(Float16, ConversionsMatchLibTorch) {
  // Values around every rounding case, subnormals, overflow, NaN; a length
  // that leaves a scalar tail. LibTorch's own conversions are the reference.
  std::mt19937 gen(3);
  std::normal_distribution<float> gauss(0.0f, 3.0f);
  std::vector<float> x(1027);
  for (auto& v : x) v = gauss(gen) * std::pow(10.0f, static_cast<float>(gen() % 12) - 8.0f);
  const float special[] = {0.0f,         -0.0f,  65504.0f,
                           65520.0f,     1e6f,   -1e6f,
                           3.4e38f,      1e-45f, std::numeric_limits<float>::infinity(),
                           std::nanf("")};
  std::copy(std::begin(special), std::end(special), x.begin());
  const auto n = static_cast<std::int64_t>(x.size());
  std::vector<std::uint16_t> h(x.size()), b(x.size());
  tnt::comm::detail::float_to_float16(x.data(), h.data(), n);
  tnt::comm::detail::float_to_bfloat16(x.data(), b.data(), n);
  std::vector<float> hx(x.size()), bx(x.size());
  tnt::comm::detail::float16_to_float(h.data(), hx.data(), n);
  tnt::comm::detail::bfloat16_to_float(b.data(), bx.data(), n);
  for (std::size_t i = 0; i < x.size(); ++i) {
    const float want_h = static_cast<float>(c10::Half(x[i]));
    const float want_b = static_cast<float>(c10::BFloat16(x[i]));
    if (std::isnan(x[i])) {
      EXPECT_TRUE(std::isnan(hx[i]) && std::isnan(bx[i])) << "element " << i;
      continue;
    }
    EXPECT_EQ(h[i], c10::Half(x[i]).x) << "float16 of " << x[i] << " (element " << i << ")";
    EXPECT_EQ(b[i], c10::BFloat16(x[i]).x) << "bfloat16 of " << x[i] << " (element " << i << ")";
    EXPECT_EQ(hx[i], want_h) << "element " << i;
    EXPECT_EQ(bx[i], want_b) << "element " << i;
  }
}

}  // namespace
