// The order-dependent part of the storing census: the Frobenius error, summed over rows in row order.
#include "format/value_store.hpp"

#include <climits>

namespace bcsr24::detail {

double frobenius_relative_error(const std::vector<RowSums>& row_sums, const std::vector<double>& row_max) {
  // Row i's sums are in units of 4^n_i (n_i = ilogb of its largest |a|). They are added relative to the largest
  // unit: a row far below it adds nothing a double could hold next to the largest row's sum of squares (>= 1).
  int top = INT_MIN;
  for (const double m : row_max)
    if (m > 0.0) top = std::max(top, std::ilogb(m));
  if (top == INT_MIN) return 0.0;
  double source = 0.0, error = 0.0;
  for (std::size_t i = 0; i < row_max.size(); ++i) {
    if (row_max[i] <= 0.0) continue;
    const double weight = power_of_two(2 * (std::ilogb(row_max[i]) - top));
    source += row_sums[i].source_sq * weight;
    error += row_sums[i].error_sq * weight;
  }
  return std::sqrt(error / source);
}

}  // namespace bcsr24::detail
