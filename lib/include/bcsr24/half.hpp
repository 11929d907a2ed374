// The 16-bit value formats on the host, without CUDA headers: IEEE binary16 (fp16) and bfloat16 (bf16),
// their storage type and exact conversions.
#pragma once

#include <cstdint>

namespace bcsr24 {

/// Bits of one 16-bit stored value: an IEEE binary16 value (layout-compatible with CUDA's __half) or, in a
/// matrix stored with Precision::bf16, a bfloat16 value (layout-compatible with __nv_bfloat16). The type says
/// only "16 bits"; the matrix's precision says how to read them.
using fp16_t = std::uint16_t;

/// Largest finite fp16 value.
inline constexpr double kFp16Max = 65504.0;
/// Smallest positive normal fp16 value (2^-14); below it precision drops (subnormals).
inline constexpr double kFp16MinNormal = 6.103515625e-05;
/// Smallest positive subnormal fp16 value (2^-24); magnitudes under half of it round to zero.
inline constexpr double kFp16MinSubnormal = 5.9604644775390625e-08;

/// Round-to-nearest-even conversion; overflow gives +-inf, NaN stays NaN.
fp16_t double_to_fp16(double value) noexcept;
fp16_t float_to_fp16(float value) noexcept;
/// Exact widening conversion.
float fp16_to_float(fp16_t bits) noexcept;

/// Largest finite bf16 value, (2 - 2^-7) * 2^127.
inline constexpr double kBf16Max = 3.3895313892515355e38;
/// Smallest positive normal bf16 value (2^-126, as fp32's); below it precision drops (subnormals).
inline constexpr double kBf16MinNormal = 1.1754943508222875e-38;
/// Smallest positive subnormal bf16 value (2^-133); magnitudes under half of it round to zero.
inline constexpr double kBf16MinSubnormal = 9.183549615799121e-41;

/// bfloat16 (fp32's sign and 8 exponent bits, 7 fraction bits): rounds to nearest even once, straight from the
/// double (no detour through float); overflow gives +-inf, NaN stays NaN, subnormals are kept.
fp16_t double_to_bf16(double value) noexcept;
/// Exact widening conversion (bf16 is the upper half of an fp32).
float bf16_to_float(fp16_t bits) noexcept;

}  // namespace bcsr24
