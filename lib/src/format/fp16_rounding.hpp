// double -> 16-bit float rounding (nearest, ties to even) as inline functions, so the converter's hot loop can
// inline them: one template for the IEEE-style 16-bit formats, instantiated for fp16 here and for bf16 in
// bf16_rounding.hpp. half.cpp's double_to_fp16 and double_to_bf16 are these same functions.
#pragma once

#include <cstdint>
#include <cstring>

#include "bcsr24/half.hpp"

namespace bcsr24::detail {

inline constexpr std::uint16_t kFp16SignBit = 0x8000;

/// Shifts `significand` right by `shift` (1..63) and rounds the discarded bits to nearest, ties to even.
constexpr std::uint64_t shift_right_round_even(std::uint64_t significand, int shift) {
  const std::uint64_t kept = significand >> shift;
  const std::uint64_t rest = significand & ((std::uint64_t{1} << shift) - 1);
  const std::uint64_t half = std::uint64_t{1} << (shift - 1);
  if (rest > half || (rest == half && (kept & 1))) return kept + 1;
  return kept;
}

/// A double rounded to the 16-bit format with kExponentBits exponent bits and kFractionBits fraction bits (fp16:
/// 5 and 10; bf16: 8 and 7). Works on the bits of the double so the result is rounded once, directly from the
/// 53-bit significand: going through float first would round twice and get some ties wrong.
template <int kExponentBits, int kFractionBits>
inline fp16_t round_double_to_16bit(double value) noexcept {
  static_assert(1 + kExponentBits + kFractionBits == 16, "a sign, the exponent and the fraction fill 16 bits");
  constexpr int kBias = (1 << (kExponentBits - 1)) - 1;  // fp16 15, bf16 127
  constexpr int kDropped = 52 - kFractionBits;           // fraction bits of the double that do not fit: 42, 45
  constexpr std::uint16_t kSignBit = 0x8000;
  constexpr std::uint16_t kInfBits = ((1u << kExponentBits) - 1) << kFractionBits;  // 0x7C00, 0x7F80
  constexpr std::uint16_t kQuietNanBit = 1u << (kFractionBits - 1);                 // 0x0200, 0x0040
  constexpr int kUnitExponent = 1 - kBias - kFractionBits;  // the smallest subnormal is 2^kUnitExponent: -24, -133

  std::uint64_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  const auto sign = static_cast<std::uint16_t>((bits >> 48) & kSignBit);
  const int biased_exponent = static_cast<int>((bits >> 52) & 0x7FF);
  const std::uint64_t fraction = bits & ((std::uint64_t{1} << 52) - 1);
  const int exponent = biased_exponent - 1023;  // value = significand * 2^(exponent - 52)

  if (exponent >= 1 - kBias && exponent <= kBias) {
    // Normal range (the common case): keep kFractionBits + 1 significant bits. A carry out of the rounding (fp16:
    // 2047.5 -> 2048) moves into the exponent field by plain addition, and from the largest exponent into the
    // infinity pattern, both as IEEE wants; fp16's 65520 = 2047.5 * 2^5 therefore becomes infinity.
    const std::uint64_t significand = fraction | (std::uint64_t{1} << 52);
    const std::uint64_t rounded = shift_right_round_even(significand, kDropped);  // in [2^F, 2^(F + 1)]
    return static_cast<fp16_t>(sign | ((static_cast<unsigned>(exponent + kBias - 1) << kFractionBits) + rounded));
  }
  if (biased_exponent == 0x7FF) {
    if (fraction == 0) return sign | kInfBits;
    // NaN stays NaN: keep the top payload bits and force the quiet bit so the payload never becomes 0 (inf).
    return static_cast<fp16_t>(sign | kInfBits | kQuietNanBit | static_cast<std::uint16_t>(fraction >> kDropped));
  }
  if (exponent > kBias) return sign | kInfBits;  // fp16: 2^16 and above; bf16: 2^128 and above
  // Subnormal range (this also covers double subnormals and zero, far below half the smallest subnormal). The
  // result counts units of 2^kUnitExponent: value / 2^kUnitExponent = significand * 2^(exponent - 52 - kUnitExponent).
  const int shift = 52 + kUnitExponent - exponent;      // > kDropped
  if (shift > 53 || biased_exponent == 0) return sign;  // below half a unit: rounds to zero
  // A result of 2^kFractionBits is the smallest normal: the encoding continues seamlessly.
  return static_cast<fp16_t>(sign | shift_right_round_even(fraction | (std::uint64_t{1} << 52), shift));
}

inline fp16_t round_double_to_fp16(double value) noexcept { return round_double_to_16bit<5, 10>(value); }

}  // namespace bcsr24::detail
