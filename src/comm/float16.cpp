#include "comm/float16.h"

#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include <cstring>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define TNT_X86_VECTOR 1
#endif

namespace tnt::comm::detail {
namespace {

template <typename T>
void sum_scalar(const std::uint16_t* in, std::uint16_t* inout, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) {
    T a, b;
    std::memcpy(&a, in + i, 2);
    std::memcpy(&b, inout + i, 2);
    const T r(static_cast<float>(a) + static_cast<float>(b));
    std::memcpy(inout + i, &r, 2);
  }
}

#ifdef TNT_X86_VECTOR
__attribute__((target("avx2,f16c"))) void sum_float16_avx2(const std::uint16_t* in,
                                                           std::uint16_t* inout, std::int64_t n) {
  std::int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 a = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i)));
    const __m256 b = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(inout + i)));
    const __m128i r = _mm256_cvtps_ph(_mm256_add_ps(a, b), _MM_FROUND_TO_NEAREST_INT);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(inout + i), r);
  }
  sum_scalar<c10::Half>(in + i, inout + i, n - i);
}

// bfloat16 -> float is a shift; float -> bfloat16 rounds to nearest-even by
// adding 0x7FFF plus the lowest kept bit, as c10::BFloat16 does; NaN maps to
// the quiet NaN 0x7FC0 (c10's choice too).
__attribute__((target("avx2"))) inline __m256 load_bfloat16(const std::uint16_t* p) {
  const __m256i wide = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  return _mm256_castsi256_ps(_mm256_slli_epi32(wide, 16));
}

__attribute__((target("avx2"))) inline void store_bfloat16(__m256 v, std::uint16_t* p) {
  const __m256i bits = _mm256_castps_si256(v);
  const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(bits, 16), _mm256_set1_epi32(1));
  const __m256i bias = _mm256_add_epi32(_mm256_set1_epi32(0x7FFF), lsb);
  __m256i rounded = _mm256_srli_epi32(_mm256_add_epi32(bits, bias), 16);
  const __m256i is_nan = _mm256_castps_si256(_mm256_cmp_ps(v, v, _CMP_UNORD_Q));
  rounded = _mm256_blendv_epi8(rounded, _mm256_set1_epi32(0x7FC0), is_nan);
  // 8 x 32-bit values (each < 65536) -> 8 x 16-bit: pack within lanes, then
  // gather the two lanes' low halves.
  const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(rounded, rounded), 0x08);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm256_castsi256_si128(packed));
}

__attribute__((target("avx2"))) void sum_bfloat16_avx2(const std::uint16_t* in,
                                                       std::uint16_t* inout, std::int64_t n) {
  std::int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    store_bfloat16(_mm256_add_ps(load_bfloat16(in + i), load_bfloat16(inout + i)), inout + i);
  }
  sum_scalar<c10::BFloat16>(in + i, inout + i, n - i);
}

__attribute__((target("avx2"))) void float_to_bfloat16_avx2(const float* in, std::uint16_t* out,
                                                            std::int64_t n) {
  std::int64_t i = 0;
  for (; i + 8 <= n; i += 8) store_bfloat16(_mm256_loadu_ps(in + i), out + i);
  for (; i < n; ++i) out[i] = c10::BFloat16(in[i]).x;
}

__attribute__((target("avx2"))) void bfloat16_to_float_avx2(const std::uint16_t* in, float* out,
                                                            std::int64_t n) {
  std::int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(out + i, load_bfloat16(in + i));
  for (; i < n; ++i) out[i] = static_cast<float>(c10::BFloat16(in[i], c10::BFloat16::from_bits()));
}

__attribute__((target("avx2,f16c"))) void float_to_float16_avx2(const float* in, std::uint16_t* out,
                                                                std::int64_t n) {
  std::int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i),
                     _mm256_cvtps_ph(_mm256_loadu_ps(in + i), _MM_FROUND_TO_NEAREST_INT));
  }
  for (; i < n; ++i) out[i] = c10::Half(in[i]).x;
}

__attribute__((target("avx2,f16c"))) void float16_to_float_avx2(const std::uint16_t* in, float* out,
                                                                std::int64_t n) {
  std::int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    _mm256_storeu_ps(out + i,
                     _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i))));
  }
  for (; i < n; ++i) out[i] = static_cast<float>(c10::Half(in[i], c10::Half::from_bits()));
}
#endif

}  // namespace

bool vector16_available() {
#ifdef TNT_X86_VECTOR
  static const bool available = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c");
  return available;
#else
  return false;
#endif
}

void sum_float16_scalar(const std::uint16_t* in, std::uint16_t* inout, std::int64_t n) {
  sum_scalar<c10::Half>(in, inout, n);
}

void sum_bfloat16_scalar(const std::uint16_t* in, std::uint16_t* inout, std::int64_t n) {
  sum_scalar<c10::BFloat16>(in, inout, n);
}

void float_to_float16(const float* in, std::uint16_t* out, std::int64_t n) {
#ifdef TNT_X86_VECTOR
  if (vector16_available()) return float_to_float16_avx2(in, out, n);
#endif
  for (std::int64_t i = 0; i < n; ++i) out[i] = c10::Half(in[i]).x;
}

void float_to_bfloat16(const float* in, std::uint16_t* out, std::int64_t n) {
#ifdef TNT_X86_VECTOR
  if (vector16_available()) return float_to_bfloat16_avx2(in, out, n);
#endif
  for (std::int64_t i = 0; i < n; ++i) out[i] = c10::BFloat16(in[i]).x;
}

void float16_to_float(const std::uint16_t* in, float* out, std::int64_t n) {
#ifdef TNT_X86_VECTOR
  if (vector16_available()) return float16_to_float_avx2(in, out, n);
#endif
  for (std::int64_t i = 0; i < n; ++i) {
    out[i] = static_cast<float>(c10::Half(in[i], c10::Half::from_bits()));
  }
}

void bfloat16_to_float(const std::uint16_t* in, float* out, std::int64_t n) {
#ifdef TNT_X86_VECTOR
  if (vector16_available()) return bfloat16_to_float_avx2(in, out, n);
#endif
  for (std::int64_t i = 0; i < n; ++i) {
    out[i] = static_cast<float>(c10::BFloat16(in[i], c10::BFloat16::from_bits()));
  }
}

void sum_float16(const std::uint16_t* in, std::uint16_t* inout, std::int64_t n) {
#ifdef TNT_X86_VECTOR
  if (vector16_available()) return sum_float16_avx2(in, inout, n);
#endif
  sum_float16_scalar(in, inout, n);
}

void sum_bfloat16(const std::uint16_t* in, std::uint16_t* inout, std::int64_t n) {
#ifdef TNT_X86_VECTOR
  if (vector16_available()) return sum_bfloat16_avx2(in, inout, n);
#endif
  sum_bfloat16_scalar(in, inout, n);
}

}  // namespace tnt::comm::detail
