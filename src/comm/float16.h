// 16-bit floats (float16, bfloat16) for compressed gradients: the sums of
// the MPI reduction ops (each element widened to float, added, rounded back
// to nearest-even — what a float16/bfloat16 tensor addition in LibTorch does)
// and the conversions of a float32 bucket to the wire format and back. An
// AVX2/F16C path runs where the CPU has it (checked at run time); the scalar
// path is the reference and the fallback. Both give the same bits (NaN stays
// NaN; its payload may differ). LibTorch 1.13's own float -> float16
// conversion is scalar (53 ms for 20M values, 1 thread): slower than sending
// the bytes it saves at 10 Gbit/s.
#pragma once

#include <cstdint>

namespace tnt::comm::detail {

/// inout[i] = round(float(in[i]) + float(inout[i])), float16 bit patterns.
void sum_float16(const std::uint16_t* in, std::uint16_t* inout, std::int64_t n);
/// The same for bfloat16 bit patterns.
void sum_bfloat16(const std::uint16_t* in, std::uint16_t* inout, std::int64_t n);

/// The scalar reference paths (tests compare the vector paths with them).
void sum_float16_scalar(const std::uint16_t* in, std::uint16_t* inout, std::int64_t n);
void sum_bfloat16_scalar(const std::uint16_t* in, std::uint16_t* inout, std::int64_t n);

/// Conversions, rounding to nearest-even. Element types as bit patterns.
void float_to_float16(const float* in, std::uint16_t* out, std::int64_t n);
void float_to_bfloat16(const float* in, std::uint16_t* out, std::int64_t n);
void float16_to_float(const std::uint16_t* in, float* out, std::int64_t n);
void bfloat16_to_float(const std::uint16_t* in, float* out, std::int64_t n);

/// Whether the functions above take the vector path on this CPU.
bool vector16_available();

}  // namespace tnt::comm::detail
