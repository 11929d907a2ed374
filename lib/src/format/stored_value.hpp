// One stored value of each precision: encoding a scaled double into its 16-bit part(s), and decoding them back
// exactly. Every builder, decoder and CPU reference goes through these functions, so they all agree on what
// a stored value means.
#pragma once

#include <cstdint>
#include <cstring>

#include "bcsr24/half.hpp"
#include "bcsr24/precision.hpp"
#include "format/bf16_rounding.hpp"
#include "format/fp16_rounding.hpp"

namespace bcsr24::detail {

/// The bits stored for one element: `hi` in TileList::values, `lo` in values_lo (Precision::split only; 0
/// otherwise).
struct StoredValue {
  fp16_t hi = 0;
  fp16_t lo = 0;
};

/// 2^-kSplitLoShift, the weight of a split value's low part.
inline constexpr double kSplitLoWeight = 1.0 / (1 << kSplitLoShift);

/// Exact value of fp16 bits as a double (inf and NaN included), without the float detour of fp16_to_float:
/// the decoders call it for every stored element.
inline double fp16_bits_to_double(fp16_t h) {
  const unsigned exponent = (h >> 10) & 0x1Fu;
  const std::uint64_t fraction = h & 0x3FFu;
  const std::uint64_t sign = static_cast<std::uint64_t>(h & 0x8000u) << 48;
  double value;
  if (exponent - 1u < 0x1Eu) {
    // Normal (the common case): rebias the exponent (15 -> 1023), move the 10 fraction bits to the top of the
    // double's 52, keep the sign bit.
    const std::uint64_t bits = sign | (std::uint64_t{exponent + 1008} << 52) | (fraction << 42);
    std::memcpy(&value, &bits, sizeof value);
    return value;
  }
  if (exponent == 0x1F) return static_cast<double>(fp16_to_float(h));
  value = static_cast<double>(fraction) * 0x1p-24;  // subnormal or zero: fraction units of 2^-24
  return sign ? -value : value;
}

/// Exact value of bf16 bits as a double (bf16 is the upper half of an fp32).
inline double bf16_bits_to_double(fp16_t h) {
  const std::uint32_t bits = static_cast<std::uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return static_cast<double>(f);
}

/// Rounds a value already multiplied by its row's 2^-e. fp16 and bf16: one rounding to nearest even. split:
/// hi = fp16(scaled), lo = fp16((scaled - hi) * 2^kSplitLoShift); scaled - hi is exact in double, so lo is
/// also one rounding of the true residual.
inline StoredValue encode_stored_value(Precision precision, double scaled) {
  switch (precision) {
    case Precision::fp16: return {round_double_to_fp16(scaled), 0};
    case Precision::bf16: return {round_double_to_bf16(scaled), 0};
    case Precision::split: break;
  }
  const fp16_t hi = round_double_to_fp16(scaled);
  const double residual = scaled - fp16_bits_to_double(hi);
  return {hi, round_double_to_fp16(residual * (1 << kSplitLoShift))};
}

/// The scaled value a stored element represents, exactly (split: hi + 2^-11 lo needs at most 50 bits).
inline double decode_stored_value(Precision precision, fp16_t hi, fp16_t lo) {
  switch (precision) {
    case Precision::fp16: return fp16_bits_to_double(hi);
    case Precision::bf16: return bf16_bits_to_double(hi);
    case Precision::split: break;
  }
  return fp16_bits_to_double(hi) + fp16_bits_to_double(lo) * kSplitLoWeight;
}
inline double decode_stored_value(Precision precision, StoredValue v) {
  return decode_stored_value(precision, v.hi, v.lo);
}

/// True when the element holds something to multiply (a split element whose hi is 0 may still have a lo).
/// Both 16-bit formats keep the sign in bit 15, so a magnitude is zero exactly when the other 15 bits are.
inline bool is_stored_nonzero(Precision precision, fp16_t hi, fp16_t lo) {
  return (hi & 0x7FFFu) != 0 || (precision == Precision::split && (lo & 0x7FFFu) != 0);
}

/// True when the (high) part is a nonzero subnormal of its format: stored with fewer significant bits.
inline bool is_stored_subnormal(Precision precision, fp16_t hi) {
  const unsigned exponent_bits = precision == Precision::bf16 ? 0x7F80u : 0x7C00u;
  return (hi & exponent_bits) == 0 && (hi & 0x7FFFu) != 0;
}

/// True when the bits are an infinity or a NaN of the precision's format (never valid in a stored matrix).
inline bool is_stored_non_finite(Precision precision, fp16_t bits) {
  const unsigned exponent_bits = precision == Precision::bf16 ? 0x7F80u : 0x7C00u;
  return (bits & exponent_bits) == exponent_bits;
}

}  // namespace bcsr24::detail
