// Range policy of the stored formats: which magnitudes overflow or vanish in fp16 or bf16, and the power-of-two
// exponents (one per row, or one for the whole matrix) that keep the stored values inside the range.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <sstream>
#include <string>

#include "format/bcsr24_matrix.hpp"
#include "format/convert.hpp"
#include "bcsr24/error.hpp"
#include "bcsr24/half.hpp"
#include "bcsr24/precision.hpp"

namespace bcsr24::detail {

/// The range of one 16-bit format, as the scaling policies and the range census need it.
struct StorageRange {
  const char* name;
  double max;                  ///< largest finite value
  double overflow_threshold;   ///< magnitudes at or above this round to infinity
  double underflow_threshold;  ///< magnitudes at or below this round to zero (half the smallest subnormal)
  double min_normal;           ///< below this the format is subnormal (fewer significant bits)
  /// ilogb(max). Scaling up to rescue tiny values stops at 2^top_exponent, one binade of headroom below max
  /// for the sums the kernels form in fp32 anyway and for later updates of the values.
  int top_exponent;
};

// Overflow thresholds are the midpoints between max and the next power of two: the tie goes to the even
// significand, which is that power, i.e. infinity. Underflow: half the smallest subnormal, whose tie goes to 0.
inline constexpr StorageRange kFp16Range{"fp16", kFp16Max, 65520.0, 2.9802322387695312e-08 /* 2^-25 */,
                                         kFp16MinNormal, 15};
inline constexpr StorageRange kBf16Range{"bf16", kBf16Max, 3.39617752923046e+38 /* (2 - 2^-8) 2^127 */,
                                         4.591774807899561e-41 /* 2^-134 */, kBf16MinNormal, 127};

/// The range that decides overflow and flushing: bf16's for bf16, fp16's for fp16 and split (whose high part
/// is an fp16 and whose low part is never larger).
inline const StorageRange& storage_range(Precision precision) {
  return precision == Precision::bf16 ? kBf16Range : kFp16Range;
}

/// ScalingPolicy::per_row puts a row's largest magnitude m in [2^kRowTopExponent, 2^(kRowTopExponent + 1)):
/// the top binade below 2^15, so fp16 (and therefore split and bf16) never overflows, and an entry flushes to
/// zero only when it is about 2^-40 of m or smaller (fp16's smallest subnormal is 2^-24).
inline constexpr int kRowTopExponent = 14;

/// Exponent e of a row whose largest magnitude is row_max > 0 (stored = a * 2^-e).
inline std::int32_t per_row_exponent(double row_max) { return std::ilogb(row_max) - kRowTopExponent; }

/// Picks the matrix-wide exponent e (stored = a * 2^-e) of ScalingPolicy::automatic or none for a matrix whose
/// magnitude statistics are in `s` (max_abs, min_abs_nonzero, overflow_count filled, against `range`).
/// @throw RangeError when values overflow and the policy forbids scaling.
inline std::int32_t choose_scaling_exponent(const Fp16Scaling& s, std::int64_t nonzeros, ScalingPolicy policy,
                                            const StorageRange& range) {
  if (nonzeros == 0) return 0;
  if (s.overflow_count > 0) {
    if (policy == ScalingPolicy::none) {
      std::ostringstream msg;
      msg.precision(17);
      msg << "convert_to_bcsr24: " << s.overflow_count << " value(s) exceed the " << range.name
          << " range (largest |a| = " << s.max_abs << ", " << range.name << " max = " << range.max
          << ") and ScalingPolicy::none forbids scaling";
      throw RangeError(msg.str());
    }
    // Smallest e >= 0 with max * 2^-e <= range max: start just below the answer and step up.
    std::int32_t e = std::max(0, std::ilogb(s.max_abs) - range.top_exponent - 1);
    while (std::ldexp(s.max_abs, -e) > range.max) ++e;
    return e;
  }
  if (policy == ScalingPolicy::none || s.min_abs_nonzero >= range.min_normal) return 0;
  // Some nonzeros would be subnormal or vanish: scale up as far as the ceiling allows.
  // max = 1.f * 2^x, so max * 2^(top - x) >= 2^top with equality only for f = 0: at most one step down.
  const double ceiling = std::ldexp(1.0, range.top_exponent);
  std::int32_t k = range.top_exponent - std::ilogb(s.max_abs);
  while (k > 0 && std::ldexp(s.max_abs, k) > ceiling) --k;
  return k > 0 ? -k : 0;
}

}  // namespace bcsr24::detail
