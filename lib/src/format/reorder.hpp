// Row (and, for square matrices, symmetric) reorderings that make the 16-row bands of the tile format share
// columns: reverse Cuthill-McKee on the graph of A + A^T with supervariables.
#pragma once

#include <cstdint>
#include <vector>

#include "bcsr24/csr_matrix.hpp"

namespace bcsr24 {

/// What a reordering produced. `order` is new-to-old: position i of the reordered matrix holds original row
/// order[i]. For a symmetric reordering the same permutation applies to the columns.
struct RowOrdering {
  std::vector<std::int32_t> order;   ///< a permutation of 0 .. rows-1
  bool symmetric = false;            ///< true when computed on A + A^T of a square matrix (columns too)
  std::int32_t supervariables = 0;   ///< rows after merging rows with identical patterns (empty rows: one each)
  std::int32_t components = 0;       ///< connected components of the graph (an empty row is one)
};

/// Reverse Cuthill-McKee. Square matrices: on the pattern of A + A^T (diagonal ignored), rows with identical
/// patterns of A + A^T (the unknowns of one mesh node) are merged into one supervariable first and stay
/// consecutive; each component starts from a pseudo-peripheral node. Rectangular matrices: rows only, by a
/// Cuthill-McKee sweep of the bipartite row-column graph (rows that share columns end up close).
/// Components come in the order of their smallest row. Empty rows go last, in ascending order (for a square A:
/// rows i with no entry in row i or column i). Deterministic. O(nnz) memory beyond A.
/// @throw SizeLimitError if A + A^T would exceed 32-bit offsets.
RowOrdering reverse_cuthill_mckee(const CsrMatrix& a);

/// inverse[order[i]] = i.
/// @throw InvalidArgument if `order` is not a permutation of 0 .. size-1.
std::vector<std::int32_t> inverse_permutation(const std::vector<std::int32_t>& order);

/// Bandwidth max |i - j| over the nonzeros of P A P^T (P from `order`; empty order = identity). A rectangular A
/// is permuted by rows only: max |new row - column|. For tests and reports.
/// @throw InvalidArgument if `order` is neither empty nor a permutation of the rows.
std::int64_t permuted_bandwidth(const CsrMatrix& a, const std::vector<std::int32_t>& order);

}  // namespace bcsr24
