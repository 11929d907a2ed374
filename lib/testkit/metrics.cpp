// Work and traffic counts of one multiply (see metrics.hpp).
#include "bcsr24_testkit/metrics.hpp"

#include "format/tile_layout.hpp"

namespace bcsr24 {

SpmmCost spmm_cost(const TileCensus& census, std::int64_t rows, std::int64_t cols, std::int64_t n,
                   int c_element_bytes, bool reads_c) {
  SpmmCost cost;
  cost.thesis_flops = 2.0 * double(census.stored_tiles()) * kTileRows * kTileCols * double(n);
  cost.useful_flops = 2.0 * double(census.nnz) * double(n);
  // Lists, B-row indices, row map; fp16 B.
  cost.min_bytes = double(census.total_bytes()) + operand_bytes(rows, cols, n, 2, c_element_bytes, reads_c);
  return cost;
}

double operand_bytes(std::int64_t rows, std::int64_t cols, std::int64_t n, int b_element_bytes, int c_element_bytes,
                     bool reads_c) {
  const double b_bytes = double(cols) * double(n) * b_element_bytes;
  const double c_bytes = double(rows) * double(n) * c_element_bytes * (reads_c ? 2.0 : 1.0);
  return b_bytes + c_bytes;
}

double plan_dram_bytes(const PlanReport& plan, std::int64_t rows, std::int64_t cols, int c_element_bytes,
                       bool reads_c) {
  const experimental::PlanDiagnostics& d = plan.diagnostics;
  const double a_bytes = double(d.sparse24_bytes + d.dense_bytes + d.csr_bytes + d.vector_bytes);
  const int b_element_bytes = plan.input == ElementType::f32 ? 4 : 2;
  return a_bytes + operand_bytes(rows, cols, plan.n, b_element_bytes, c_element_bytes, reads_c);
}

TileSuitability tile_suitability(const TileCensus& census, std::int64_t rows) {
  TileSuitability s;
  s.tile_bytes = double(census.total_bytes());
  s.csr_f16_bytes = double(census.nnz) * 6.0 + (double(rows) + 1.0) * 4.0;
  s.ratio = s.csr_f16_bytes > 0 ? s.tile_bytes / s.csr_f16_bytes : 0.0;
  s.suits_tiles = s.ratio <= kMaxSuitableByteRatio;
  return s;
}

}  // namespace bcsr24
