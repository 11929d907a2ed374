// Consistency of a host matrix's layout fields (row_order, b_rows) and precision fields (values_lo,
// row_exponent), shared by every entry that adopts a matrix it did not build: load_bcsr24,
// SparseOperator::from_host, DeviceMatrix.
#pragma once

#include <string>

#include "format/bcsr24_matrix.hpp"

namespace bcsr24::detail {

/// The first problem found, or an empty string: row_order empty or 16 per tile row, with every original row
/// exactly once below `rows` and -1 on the padding rows; each list's b_rows empty or 32 per tile, entries in
/// [-1, cols); in a gathered matrix, every non-empty list has b_rows; precision one of the three, values_lo as
/// long as values in a split matrix and empty otherwise, row_exponent empty or one per row.
std::string layout_problem(const Bcsr24Matrix& a);

}  // namespace bcsr24::detail
