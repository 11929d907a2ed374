// double -> fp16 rounding (nearest, ties to even) as an inline function, so the converter's hot loop can
// inline it; half.cpp's double_to_fp16 is this same function.
#pragma once

#include <cstdint>
#include <cstring>

#include "bcsr24/half.hpp"

namespace bcsr24::detail {

inline constexpr std::uint16_t kFp16SignBit = 0x8000;
inline constexpr std::uint16_t kFp16InfBits = 0x7C00;
inline constexpr std::uint16_t kFp16QuietNanBit = 0x0200;

/// Shifts `significand` right by `shift` (1..63) and rounds the discarded bits to nearest, ties to even.
constexpr std::uint64_t shift_right_round_even(std::uint64_t significand, int shift) {
  const std::uint64_t kept = significand >> shift;
  const std::uint64_t rest = significand & ((std::uint64_t{1} << shift) - 1);
  const std::uint64_t half = std::uint64_t{1} << (shift - 1);
  if (rest > half || (rest == half && (kept & 1))) return kept + 1;
  return kept;
}

inline fp16_t round_double_to_fp16(double value) noexcept {
  // Works on the bits of the double so the result is rounded once, directly from the 53-bit significand:
  // going through float first would round twice and get some ties wrong.
  std::uint64_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  const auto sign = static_cast<std::uint16_t>((bits >> 48) & kFp16SignBit);
  const int biased_exponent = static_cast<int>((bits >> 52) & 0x7FF);
  const std::uint64_t fraction = bits & ((std::uint64_t{1} << 52) - 1);
  const int exponent = biased_exponent - 1023;  // value = significand * 2^(exponent - 52)

  if (exponent >= -14 && exponent <= 15) {
    // Normal range (the common case): keep 11 significant bits. A carry out of the rounding (2047.5 -> 2048)
    // moves into the exponent field by plain addition, and from exponent 30 into the infinity pattern, both as
    // IEEE wants; 65520 = 2047.5 * 2^5 therefore becomes infinity.
    const std::uint64_t significand = fraction | (std::uint64_t{1} << 52);
    const std::uint64_t rounded = shift_right_round_even(significand, 42);  // in [1024, 2048]
    return static_cast<fp16_t>(sign | ((static_cast<unsigned>(exponent + 14) << 10) + rounded));
  }
  if (biased_exponent == 0x7FF) {
    if (fraction == 0) return sign | kFp16InfBits;
    // NaN stays NaN: keep the top payload bits and force the quiet bit so the payload never becomes 0 (inf).
    return static_cast<fp16_t>(sign | kFp16InfBits | kFp16QuietNanBit | static_cast<std::uint16_t>(fraction >> 42));
  }
  if (exponent > 15) return sign | kFp16InfBits;  // 2^16 and above
  // Subnormal range (this also covers double subnormals and zero, far below half the smallest fp16 subnormal).
  // The result counts units of 2^-24: value / 2^-24 = significand * 2^(exponent - 28).
  const int shift = 28 - exponent;  // > 42
  if (shift > 53 || biased_exponent == 0) return sign;  // below 2^-25 (half a unit): rounds to zero
  // A result of 1024 is the smallest normal (0x0400): the encoding continues seamlessly.
  return static_cast<fp16_t>(sign | shift_right_round_even(fraction | (std::uint64_t{1} << 52), shift));
}

}  // namespace bcsr24::detail
