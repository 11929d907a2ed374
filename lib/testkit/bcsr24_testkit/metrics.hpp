// Work and traffic of one multiply: the figures every benchmark and spmm_run report.
#pragma once

#include <cstdint>

#include "bcsr24/operator_reports.hpp"
#include "bcsr24/spmm_plan.hpp"

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

/// Bytes of B read once (cols x n elements of `b_element_bytes`) and C written once, and read once more when
/// `reads_c` (beta != 0): the operands' part of every byte count here.
double operand_bytes(std::int64_t rows, std::int64_t cols, std::int64_t n, int b_element_bytes, int c_element_bytes,
                     bool reads_c);

/// The DRAM bytes one product with `plan` must move at least: the bytes of A the plan reads (the report's per-path
/// counts: values, metadata, column indices and pointers of its 2:4 tiles, dense tiles, CSR rows and narrow
/// vectors), B once in the plan's input type and C once (twice when `reads_c`). A's rows x cols; C's elements of
/// `c_element_bytes`. Unlike SpmmCost::min_bytes (every stored tile), this is what the plan itself reads: a CSR
/// plan counts CSR bytes.
double plan_dram_bytes(const PlanReport& plan, std::int64_t rows, std::int64_t cols, int c_element_bytes = 4,
                       bool reads_c = false);

/// Does the matrix suit the tile path? Compares the bytes of the tile lists with the bytes of the same matrix
/// in CSR with fp16 values and 32-bit indices (what cuSPARSE CSR fp16 reads).
struct TileSuitability {
  double tile_bytes = 0;     ///< both tile lists
  double csr_f16_bytes = 0;  ///< nnz * (2 + 4) + (rows + 1) * 4
  double ratio = 0;          ///< tile_bytes / csr_f16_bytes
  /// ratio <= kMaxSuitableByteRatio. A heuristic from the SuiteSparse sweep on the H100 (docs/PERFORMANCE.md):
  /// up to ~12x more bytes the tensor-core kernels still beat cuSPARSE at small n, because cuSPARSE runs far
  /// from its memory floor; at ~80x (1.2 nonzeros per tile) they are 2-14x slower.
  bool suits_tiles = false;
};
inline constexpr double kMaxSuitableByteRatio = 16.0;

TileSuitability tile_suitability(const TileCensus& census, std::int64_t rows);

/// Memory bandwidth used for the "fraction of the memory floor" figure, bytes/s. The H100's measured
/// device-to-device copy rate on the lent machine was ~3.0e12 B/s (docs/PERFORMANCE.md).
inline constexpr double kReferenceBandwidth = 3.0e12;

}  // namespace bcsr24
