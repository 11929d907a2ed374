// Work and traffic counts of one multiply (see metrics.hpp).
#include "bcsr24_testkit/metrics.hpp"

#include "format/tile_layout.hpp"

namespace bcsr24 {

SpmmCost spmm_cost(const TileCensus& census, std::int64_t rows, std::int64_t cols, std::int64_t n,
                   int c_element_bytes, bool reads_c) {
  SpmmCost cost;
  cost.thesis_flops = 2.0 * double(census.stored_tiles()) * kTileRows * kTileCols * double(n);
  cost.useful_flops = 2.0 * double(census.nnz) * double(n);
  const double b_bytes = double(cols) * double(n) * 2.0;
  const double c_bytes = double(rows) * double(n) * c_element_bytes * (reads_c ? 2.0 : 1.0);
  cost.min_bytes = double(census.total_bytes()) + b_bytes + c_bytes;  // lists, B-row indices, row map
  return cost;
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
