// fp16 range policy: which magnitudes overflow or vanish in fp16, and the power-of-two scale that avoids it.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <sstream>
#include <string>

#include "bcsr24/bcsr24_matrix.hpp"
#include "bcsr24/convert.hpp"
#include "bcsr24/error.hpp"
#include "bcsr24/half.hpp"

namespace bcsr24::detail {

/// Magnitudes at or above this round to infinity (65520 is the midpoint between 65504 and 2^16; ties go to
/// the even significand, which is 2^16, i.e. infinity).
inline constexpr double kFp16OverflowThreshold = 65520.0;
/// Magnitudes at or below this round to zero (2^-25 is half the smallest subnormal; the tie goes to 0).
inline constexpr double kFp16UnderflowThreshold = 2.9802322387695312e-08;  // 2^-25
/// When scaling up to rescue tiny values, the largest magnitude is kept at or under 2^15, leaving one binade
/// of headroom below 65504 for the sums the kernels form in fp32 anyway and for later updates of the values.
inline constexpr double kScaleUpCeiling = 32768.0;

/// Picks the exponent e (stored = a * 2^-e) for a matrix whose magnitude statistics are in `s`
/// (max_abs, min_abs_nonzero, overflow_count filled).
/// @throw RangeError when values overflow and the policy forbids scaling.
inline std::int32_t choose_scaling_exponent(const Fp16Scaling& s, std::int64_t nonzeros, ScalingPolicy policy) {
  if (nonzeros == 0) return 0;
  if (s.overflow_count > 0) {
    if (policy == ScalingPolicy::none) {
      std::ostringstream msg;
      msg.precision(17);
      msg << "convert_to_bcsr24: " << s.overflow_count << " value(s) exceed the fp16 range (largest |a| = "
          << s.max_abs << ", fp16 max = " << kFp16Max << ") and ScalingPolicy::none forbids scaling";
      throw RangeError(msg.str());
    }
    // Smallest e >= 0 with max * 2^-e <= 65504: start just below the answer and step up.
    std::int32_t e = std::max(0, std::ilogb(s.max_abs) - 16);
    while (std::ldexp(s.max_abs, -e) > kFp16Max) ++e;
    return e;
  }
  if (policy == ScalingPolicy::none || s.min_abs_nonzero >= kFp16MinNormal) return 0;
  // Some nonzeros would be subnormal or vanish: scale up as far as the ceiling allows.
  // max = 1.f * 2^x, so max * 2^(15-x) >= 2^15 with equality only for f = 0: at most one step down.
  std::int32_t k = 15 - std::ilogb(s.max_abs);
  while (k > 0 && std::ldexp(s.max_abs, k) > kScaleUpCeiling) --k;
  return k > 0 ? -k : 0;
}

}  // namespace bcsr24::detail
