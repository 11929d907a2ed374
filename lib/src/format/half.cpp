// Exact host conversions between double/float and the 16-bit formats (IEEE binary16, bfloat16), rounding to
// nearest, ties to even.
#include "bcsr24/half.hpp"

#include <cstring>

#include "format/bf16_rounding.hpp"
#include "format/fp16_rounding.hpp"

namespace bcsr24 {

fp16_t double_to_fp16(double value) noexcept { return detail::round_double_to_fp16(value); }

fp16_t float_to_fp16(float value) noexcept {
  // float -> double is exact, so this rounds only once.
  return double_to_fp16(static_cast<double>(value));
}

float fp16_to_float(fp16_t bits) noexcept {
  const std::uint32_t sign = static_cast<std::uint32_t>(bits & detail::kFp16SignBit) << 16;
  const std::uint32_t exponent = (bits >> 10) & 0x1F;
  std::uint32_t fraction = bits & 0x3FF;
  std::uint32_t out;
  if (exponent == 0x1F) {
    out = sign | 0x7F800000u | (fraction << 13);  // inf, or NaN with its payload
  } else if (exponent != 0) {
    out = sign | ((exponent + 127 - 15) << 23) | (fraction << 13);
  } else if (fraction == 0) {
    out = sign;
  } else {
    // Subnormal fp16 is normal in float: normalise the fraction.
    int e = -14;
    while ((fraction & 0x400) == 0) {
      fraction <<= 1;
      --e;
    }
    out = sign | (static_cast<std::uint32_t>(e + 127) << 23) | ((fraction & 0x3FF) << 13);
  }
  float result;
  std::memcpy(&result, &out, sizeof result);
  return result;
}

fp16_t double_to_bf16(double value) noexcept { return detail::round_double_to_bf16(value); }

float bf16_to_float(fp16_t bits) noexcept {
  const std::uint32_t out = static_cast<std::uint32_t>(bits) << 16;
  float result;
  std::memcpy(&result, &out, sizeof result);
  return result;
}

}  // namespace bcsr24
