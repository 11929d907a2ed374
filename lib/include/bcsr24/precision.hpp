// The number formats an operator can store A in and multiply with (docs/PRECISION.md).
#pragma once

#include <cstdint>
#include <string>

namespace bcsr24 {

/// How A's values are stored and multiplied. Every mode accumulates in fp32.
enum class Precision : std::uint8_t {
  fp16,   ///< A in fp16 (11-bit significand), per-row power-of-two scaled into fp16's range
  bf16,   ///< A in bf16 (8-bit significand, fp32's exponent range): for values whose range matters more
  split,  ///< A = A_hi + 2^-kSplitLoShift * A_lo, both fp16 (22-bit significand); B split the same way while
          ///< it is staged (B must be fp32). About fp32 accuracy for three tensor-core products per tile.
};

/// A_lo is stored multiplied by 2^kSplitLoShift: the residual a - hi is at most half an fp16 ulp of hi
/// (2^-11 |hi|), so the shift keeps it in fp16's normal range and its 11 bits significant.
inline constexpr int kSplitLoShift = 11;

const char* precision_name(Precision precision) noexcept;  ///< "fp16", "bf16", "split"
/// @throw InvalidArgument naming the accepted values.
Precision precision_from_name(const std::string& name);

}  // namespace bcsr24
