// double -> bf16 rounding (nearest, ties to even) as an inline function for the converter's hot loop;
// half.cpp's double_to_bf16 is this same function.
#pragma once

#include <cstdint>
#include <cstring>

#include "bcsr24/half.hpp"
#include "format/fp16_rounding.hpp"

namespace bcsr24::detail {

inline constexpr std::uint16_t kBf16SignBit = 0x8000;
inline constexpr std::uint16_t kBf16InfBits = 0x7F80;
inline constexpr std::uint16_t kBf16QuietNanBit = 0x0040;

inline fp16_t round_double_to_bf16(double value) noexcept {
  // Straight from the double's bits, like round_double_to_fp16: double -> float -> bf16 would round twice.
  std::uint64_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  const auto sign = static_cast<std::uint16_t>((bits >> 48) & kBf16SignBit);
  const int biased_exponent = static_cast<int>((bits >> 52) & 0x7FF);
  const std::uint64_t fraction = bits & ((std::uint64_t{1} << 52) - 1);
  const int exponent = biased_exponent - 1023;  // value = significand * 2^(exponent - 52)

  if (exponent >= -126 && exponent <= 127) {
    // Normal range: keep 8 significant bits. As in fp16, a carry out of the rounding (255.5 -> 256) moves into
    // the exponent field by plain addition, and from the largest exponent into the infinity pattern.
    const std::uint64_t significand = fraction | (std::uint64_t{1} << 52);
    const std::uint64_t rounded = shift_right_round_even(significand, 45);  // in [128, 256]
    return static_cast<fp16_t>(sign | ((static_cast<unsigned>(exponent + 126) << 7) + rounded));
  }
  if (biased_exponent == 0x7FF) {
    if (fraction == 0) return sign | kBf16InfBits;
    // NaN stays NaN: the top payload bits, with the quiet bit forced so the fraction never becomes 0 (inf).
    return static_cast<fp16_t>(sign | kBf16InfBits | kBf16QuietNanBit | static_cast<std::uint16_t>(fraction >> 45));
  }
  if (exponent > 127) return sign | kBf16InfBits;  // 2^128 and above
  // Subnormal range, in units of 2^-133: value / 2^-133 = significand * 2^(exponent + 81).
  const int shift = -81 - exponent;  // > 45
  if (shift > 53 || biased_exponent == 0) return sign;  // below 2^-134 (half a unit): rounds to zero
  // A result of 128 is the smallest normal (0x0080): the encoding continues seamlessly.
  return static_cast<fp16_t>(sign | shift_right_round_even(fraction | (std::uint64_t{1} << 52), shift));
}

}  // namespace bcsr24::detail
