// Triplets -> CSR (stable bucket by row, sort within rows, sum duplicates) and the CSR invariant checks.
#include "bcsr24/csr_matrix.hpp"

#include <algorithm>
#include <cstddef>
#include <limits>
#include <string>

#include "bcsr24/error.hpp"

namespace bcsr24 {

namespace {

constexpr std::int64_t kMaxNnz = std::numeric_limits<std::int32_t>::max();
/// Rows up to this length are sorted by insertion (stable, no allocation); longer ones by std::sort.
constexpr std::int32_t kInsertionSortMax = 32;

std::string triplet_text(std::size_t k, std::int32_t r, std::int32_t c) {
  return "triplet " + std::to_string(k) + " (" + std::to_string(r) + ", " + std::to_string(c) + ")";
}

/// Sorts one row's (column, value) pairs by column, keeping equal columns in input order so that
/// duplicates are summed in file order (deterministic rounding).
void sort_row(std::int32_t* col, double* val, std::int32_t n, std::vector<std::uint64_t>& keys,
              std::vector<double>& scratch) {
  if (n <= kInsertionSortMax) {
    for (std::int32_t i = 1; i < n; ++i) {
      const std::int32_t c = col[i];
      const double v = val[i];
      std::int32_t j = i;
      for (; j > 0 && col[j - 1] > c; --j) {
        col[j] = col[j - 1];
        val[j] = val[j - 1];
      }
      col[j] = c;
      val[j] = v;
    }
    return;
  }
  // Key = column, then position: all keys differ, so an unstable sort gives the stable order.
  keys.resize(static_cast<std::size_t>(n));
  for (std::int32_t i = 0; i < n; ++i)
    keys[static_cast<std::size_t>(i)] = (static_cast<std::uint64_t>(col[i]) << 32) | static_cast<std::uint32_t>(i);
  std::sort(keys.begin(), keys.end());
  scratch.assign(val, val + n);
  for (std::int32_t i = 0; i < n; ++i) {
    const std::uint64_t key = keys[static_cast<std::size_t>(i)];
    col[i] = static_cast<std::int32_t>(key >> 32);
    val[i] = scratch[static_cast<std::uint32_t>(key)];
  }
}

}  // namespace

CsrMatrix csr_from_triplets(std::int32_t rows, std::int32_t cols, const std::vector<std::int32_t>& row,
                            const std::vector<std::int32_t>& col, const std::vector<double>& value) {
  if (rows < 0 || cols < 0)
    throw InvalidArgument("csr_from_triplets: negative dimensions " + std::to_string(rows) + " x " + std::to_string(cols));
  if (row.size() != col.size() || row.size() != value.size())
    throw InvalidArgument("csr_from_triplets: row, col and value differ in length (" + std::to_string(row.size()) + ", " +
                          std::to_string(col.size()) + ", " + std::to_string(value.size()) + ")");
  if (static_cast<std::int64_t>(row.size()) > kMaxNnz)
    throw SizeLimitError("csr_from_triplets: " + std::to_string(row.size()) +
                         " triplets exceed the 32-bit nnz limit 2147483647");
  const std::size_t n = row.size();

  CsrMatrix a;
  a.rows = rows;
  a.cols = cols;
  // Count per row (validating indices), then prefix sums: row_ptr[r] = first slot of row r.
  a.row_ptr.assign(static_cast<std::size_t>(rows) + 1, 0);
  for (std::size_t k = 0; k < n; ++k) {
    const std::int32_t r = row[k];
    const std::int32_t c = col[k];
    if (r < 0 || r >= rows || c < 0 || c >= cols)
      throw InvalidArgument("csr_from_triplets: " + triplet_text(k, r, c) + " is outside a " + std::to_string(rows) +
                            " x " + std::to_string(cols) + " matrix");
    ++a.row_ptr[static_cast<std::size_t>(r) + 1];
  }
  for (std::size_t r = 0; r < static_cast<std::size_t>(rows); ++r) a.row_ptr[r + 1] += a.row_ptr[r];

  // Stable scatter into row buckets: within a row, entries keep their input order.
  a.col_idx.resize(n);
  a.values.resize(n);
  {
    std::vector<std::int32_t> fill(a.row_ptr.begin(), a.row_ptr.end() - 1);
    for (std::size_t k = 0; k < n; ++k) {
      const auto slot = static_cast<std::size_t>(fill[static_cast<std::size_t>(row[k])]++);
      a.col_idx[slot] = col[k];
      a.values[slot] = value[k];
    }
  }

  sort_rows_and_sum_duplicates(a);
  return a;
}

void sort_rows_and_sum_duplicates(CsrMatrix& a) {
  const std::int32_t rows = a.rows;
  // Sort each row by column and sum duplicates, compacting in place. Explicit zeros stay: they are
  // entries of the file, and dropping them is the BCSR conversion's decision, not the reader's.
  std::vector<std::uint64_t> keys;
  std::vector<double> scratch;
  std::int32_t write = 0;
  std::int32_t begin = 0;
  for (std::size_t r = 0; r < static_cast<std::size_t>(rows); ++r) {
    const std::int32_t end = a.row_ptr[r + 1];
    std::int32_t* c = a.col_idx.data() + begin;
    double* v = a.values.data() + begin;
    const std::int32_t len = end - begin;
    if (!std::is_sorted(c, c + len)) sort_row(c, v, len, keys, scratch);
    const std::int32_t row_start = write;
    for (std::int32_t i = 0; i < len; ++i) {
      if (write > row_start && a.col_idx[static_cast<std::size_t>(write) - 1] == c[i]) {
        a.values[static_cast<std::size_t>(write) - 1] += v[i];
      } else {
        a.col_idx[static_cast<std::size_t>(write)] = c[i];
        a.values[static_cast<std::size_t>(write)] = v[i];
        ++write;
      }
    }
    a.row_ptr[r] = row_start;
    begin = end;
  }
  a.row_ptr[static_cast<std::size_t>(rows)] = write;
  a.col_idx.resize(static_cast<std::size_t>(write));
  a.values.resize(static_cast<std::size_t>(write));
}

void validate_csr(const CsrMatrix& a) {
  const std::string shape = std::to_string(a.rows) + " x " + std::to_string(a.cols);
  if (a.rows < 0 || a.cols < 0) throw InvalidArgument("CSR: negative dimensions " + shape);
  if (a.row_ptr.size() != static_cast<std::size_t>(a.rows) + 1)
    throw InvalidArgument("CSR: row_ptr has " + std::to_string(a.row_ptr.size()) + " entries, expected rows + 1 = " +
                          std::to_string(static_cast<std::int64_t>(a.rows) + 1));
  if (a.row_ptr[0] != 0) throw InvalidArgument("CSR: row_ptr[0] is " + std::to_string(a.row_ptr[0]) + ", expected 0");
  if (a.values.size() != a.col_idx.size())
    throw InvalidArgument("CSR: col_idx has " + std::to_string(a.col_idx.size()) + " entries but values has " +
                          std::to_string(a.values.size()));
  if (static_cast<std::size_t>(a.row_ptr.back()) != a.col_idx.size() || a.row_ptr.back() < 0)
    throw InvalidArgument("CSR: row_ptr[rows] is " + std::to_string(a.row_ptr.back()) + " but there are " +
                          std::to_string(a.col_idx.size()) + " stored entries");
  for (std::size_t r = 0; r < static_cast<std::size_t>(a.rows); ++r) {
    const std::int32_t b = a.row_ptr[r];
    const std::int32_t e = a.row_ptr[r + 1];
    if (e < b)
      throw InvalidArgument("CSR: row_ptr decreases at row " + std::to_string(r) + " (" + std::to_string(b) + " > " +
                            std::to_string(e) + ")");
    if (static_cast<std::size_t>(e) > a.col_idx.size())
      throw InvalidArgument("CSR: row_ptr[" + std::to_string(r + 1) + "] = " + std::to_string(e) + " is past nnz");
    for (std::int32_t p = b; p < e; ++p) {
      const std::int32_t c = a.col_idx[static_cast<std::size_t>(p)];
      if (c < 0 || c >= a.cols)
        throw InvalidArgument("CSR: column " + std::to_string(c) + " in row " + std::to_string(r) + " is outside " + shape);
      if (p > b && a.col_idx[static_cast<std::size_t>(p) - 1] >= c)
        throw InvalidArgument("CSR: columns of row " + std::to_string(r) + " are not sorted and unique (" +
                              std::to_string(a.col_idx[static_cast<std::size_t>(p) - 1]) + " then " +
                              std::to_string(c) + ")");
    }
  }
}

}  // namespace bcsr24
