// Host sparse matrix in CSR form with 32-bit indices and double values: what the reader produces.
#pragma once

#include <cstdint>
#include <vector>

namespace bcsr24 {

/// Compressed sparse row matrix. Column indices are sorted within each row and unique.
/// Explicit zeros from the file are kept as stored entries (the BCSR conversion ignores them).
struct CsrMatrix {
  std::int32_t rows = 0;
  std::int32_t cols = 0;
  std::vector<std::int32_t> row_ptr{0};  ///< rows + 1 entries
  std::vector<std::int32_t> col_idx;     ///< nnz entries
  std::vector<double> values;            ///< nnz entries

  std::int64_t nnz() const noexcept { return static_cast<std::int64_t>(col_idx.size()); }
};

/// Builds a CSR matrix from triplets: sorts, sums duplicates, keeps explicit zeros.
/// @throw InvalidArgument if an index is out of range or the arrays differ in length.
CsrMatrix csr_from_triplets(std::int32_t rows, std::int32_t cols, const std::vector<std::int32_t>& row,
                            const std::vector<std::int32_t>& col, const std::vector<double>& value);

/// Sorts the columns of every row and sums duplicate entries (in their input order, so the rounding is
/// deterministic), compacting the arrays in place. Explicit zeros are kept. Rows already strictly increasing
/// are left as they are. Precondition: consistent sizes and in-range columns (validated by the caller).
void sort_rows_and_sum_duplicates(CsrMatrix& a);

/// Checks the CSR invariants (sizes, monotone row_ptr, sorted unique in-range columns).
/// @throw InvalidArgument naming the first broken invariant.
void validate_csr(const CsrMatrix& a);

}  // namespace bcsr24
