// Work and traffic of one multiply: the figures every benchmark and spmm_run report.
#pragma once

#include <cstdint>

#include "bcsr24/bcsr24_matrix.hpp"

namespace bcsr24 {

/// Counts for C = alpha*A*B + beta*C with A (rows x cols) and B (cols x n).
struct SpmmCost {
  double thesis_flops = 0;  ///< 2 * stored tiles * 16 * 32 * n (the thesis's TFLOPS numerator)
  double useful_flops = 0;  ///< 2 * nnz * n
  double min_bytes = 0;     ///< tile lists once + B once + C written once (+ read once when beta != 0)
};

/// @param c_element_bytes 4 for float output, 2 for fp16 output.
SpmmCost spmm_cost(const TileCensus& census, std::int64_t rows, std::int64_t cols, std::int64_t n,
                   int c_element_bytes = 4, bool reads_c = false);

/// Memory bandwidth used for the "fraction of the memory floor" figure, bytes/s. The H100's measured
/// device-to-device copy rate on the lent machine was ~3.0e12 B/s (docs/PERFORMANCE.md).
inline constexpr double kReferenceBandwidth = 3.0e12;

}  // namespace bcsr24
