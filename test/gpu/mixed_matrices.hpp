// Matrices that mix the CSR path's row classes and the tile path's dense blocks, for the GPU tests of plans that
// split a matrix between paths and of the CSR kernel's row units (test_hybrid.cpp, test_csr_short_rows.cpp).
#pragma once

#include <cstdint>

#include "bcsr24/csr_matrix.hpp"

namespace bcsr24::test {

/// Rows [0, block_rows): dense 16 x 64 blocks on a diagonal (tiles reuse every B row 16 times); the rest: a
/// random graph of `degree` scattered nonzeros per row over all columns, some rows left empty.
CsrMatrix blocks_over_graph(std::int32_t block_rows, std::int32_t graph_rows, std::int32_t cols, std::int32_t degree,
                            std::uint64_t seed);

/// `a` with row `row` replaced by a full row (every column): a row far longer than one block's lanes cover.
CsrMatrix with_full_row(const CsrMatrix& a, std::int32_t row);

/// Short rows among the classes: 2,999 rows (an odd count), the first 160 dense blocks, row 2001 full (long), every
/// 211th row from 160 on 150 entries (medium), the rest a random graph's rows cut to their first 0 .. short_max
/// entries.
CsrMatrix short_rows_among_classes(std::uint64_t seed, std::int32_t short_max);

}  // namespace bcsr24::test
