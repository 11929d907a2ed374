// IEEE 754 binary16 (fp16) on the host, without CUDA headers: storage type and exact conversions.
#pragma once

#include <cstdint>

namespace bcsr24 {

/// Bits of one IEEE binary16 value; layout-compatible with CUDA's __half.
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

}  // namespace bcsr24
