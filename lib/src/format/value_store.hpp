// Storing the source values during conversion: each row's power-of-two scale, the encoding in the chosen
// precision, and the census of what rounding did (flushed and subnormal counts, largest errors, Frobenius
// error). Shared by both tile builders (convert.cpp, condense.cpp); the census is assembled in
// value_store.cpp.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "format/bcsr24_matrix.hpp"
#include "format/stored_value.hpp"

namespace bcsr24::detail {

/// 2^k, exact for every k a double can hold (the bit pattern for normal powers, ldexp beyond them).
inline double power_of_two(int k) {
  if (k < -1022 || k > 1023) return std::ldexp(1.0, k);
  const std::uint64_t bits = static_cast<std::uint64_t>(k + 1023) << 52;
  double p;
  std::memcpy(&p, &bits, sizeof p);
  return p;
}

/// x * 2^k: one multiplication by the prepared factor when 2^k is a normal double, else ldexp.
struct PowerOfTwoScale {
  int shift = 0;
  double factor = 1.0;
  bool by_factor = true;

  explicit PowerOfTwoScale(int k = 0)
      : shift(k), factor(k >= -1022 && k <= 1023 ? power_of_two(k) : 0.0), by_factor(k >= -1022 && k <= 1023) {}
  double operator()(double x) const { return by_factor ? x * factor : std::ldexp(x, shift); }
};

/// One row's scales, prepared when a builder starts the row. Census units are the row's own: a value times
/// 2^-n with n = ilogb(largest |a| of the row), so every |a| of the row is below 2 there and the squares of
/// rows of very different magnitude cannot overflow or vanish before they are combined.
struct RowScale {
  PowerOfTwoScale to_stored;          ///< a -> a * 2^-e
  PowerOfTwoScale stored_to_census;   ///< a * 2^-e -> a * 2^-n
  double max_in_census = 1.0;         ///< the row's largest |a| in census units, in [1, 2)
};

/// What storing did to the values of one row, in its census units; written to the per-row arrays when the
/// row is done.
struct RowSums {
  double source_sq = 0.0;  ///< sum of a^2
  double error_sq = 0.0;   ///< sum of (stored - a)^2
};

/// The order-independent part of the census of one chunk (counts and maxima), merged after the chunks ran.
struct StoreTally {
  std::int64_t subnormal = 0, flushed = 0;
  double max_flushed_relative = 0.0;  ///< largest |a| / row max among flushed entries
  double max_relative_error = 0.0;    ///< largest |stored - a| / |a| among the others

  void merge(const StoreTally& other) {
    subnormal += other.subnormal;
    flushed += other.flushed;
    max_flushed_relative = std::max(max_flushed_relative, other.max_flushed_relative);
    max_relative_error = std::max(max_relative_error, other.max_relative_error);
  }
};

/// Turns source values into stored values for the builders. Holds the scaling chosen in the first pass and the
/// per-row arrays (indexed by the row of A) it reads and fills; the builders call it from several threads on
/// disjoint rows.
class ValueStore {
 public:
  /// row_exponent: per-row exponents (added to matrix_exponent), or empty. row_max: largest |a| of each row.
  /// row_sums: rows entries, each filled by finish_row.
  ValueStore(Precision precision, std::int32_t matrix_exponent, const std::vector<std::int16_t>& row_exponent,
             const std::vector<double>& row_max, std::vector<RowSums>& row_sums)
      : precision_(precision), matrix_exponent_(matrix_exponent), row_exponent_(row_exponent), row_max_(row_max),
        row_sums_(row_sums) {}

  Precision precision() const { return precision_; }

  /// Scales of row i of A (a row with nonzeros).
  RowScale row(std::int32_t i) const {
    const auto at = static_cast<std::size_t>(i);
    const std::int32_t e = matrix_exponent_ + (row_exponent_.empty() ? 0 : row_exponent_[at]);
    const double m = row_max_[at];
    const int n = m > 0.0 ? std::ilogb(m) : 0;
    RowScale s;
    s.to_stored = PowerOfTwoScale(-e);
    s.stored_to_census = PowerOfTwoScale(e - n);
    s.max_in_census = m > 0.0 ? std::ldexp(m, -n) : 1.0;
    return s;
  }

  /// Stores source value a (nonzero) of a row with scales `row`, and counts what rounding did.
  StoredValue store(double a, const RowScale& row, RowSums& sums, StoreTally& tally) const {
    const double scaled = row.to_stored(a);
    const StoredValue v = encode_stored_value(precision_, scaled);
    const double error = decode_stored_value(precision_, v) - scaled;
    const double source_in_census = row.stored_to_census(scaled);
    const double error_in_census = row.stored_to_census(error);
    sums.source_sq += source_in_census * source_in_census;
    sums.error_sq += error_in_census * error_in_census;
    if (!is_stored_nonzero(precision_, v.hi, v.lo)) {
      // Counted, never silent: a nonzero of the source that the stored matrix does not hold.
      ++tally.flushed;
      tally.max_flushed_relative = std::max(tally.max_flushed_relative, std::fabs(source_in_census) / row.max_in_census);
    } else {
      tally.subnormal += is_stored_subnormal(precision_, v.hi);
      // Compare before dividing: almost every value is within the largest error seen so far.
      if (std::fabs(error) > tally.max_relative_error * std::fabs(scaled))
        tally.max_relative_error = std::fabs(error) / std::fabs(scaled);
    }
    return v;
  }

  /// Records row i's sums (each row is finished by exactly one builder thread).
  void finish_row(std::int32_t i, const RowSums& sums) const { row_sums_[static_cast<std::size_t>(i)] = sums; }

 private:
  Precision precision_;
  std::int32_t matrix_exponent_;
  const std::vector<std::int16_t>& row_exponent_;
  const std::vector<double>& row_max_;
  std::vector<RowSums>& row_sums_;
};

/// ||stored - A||_F / ||A||_F from the per-row sums (row_max gives each row's census unit), added up in row
/// order: the same result for every layout and thread count. 0 for a matrix without nonzeros.
double frobenius_relative_error(const std::vector<RowSums>& row_sums, const std::vector<double>& row_max);

}  // namespace bcsr24::detail
