// Rows assigned to ranks and renumbered so that each rank's rows are contiguous (PartitionMethod), the inverse
// permutation, and a rank's rows of the symmetrically permuted matrix.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "bcsr24/distributed_partition.hpp"
#include "bcsr24/error.hpp"
#include "format/name_table.hpp"
#include "metis_parts.hpp"

namespace bcsr24 {

namespace {

constexpr detail::Named<PartitionMethod> kMethods[] = {{PartitionMethod::automatic, "automatic"},
                                                       {PartitionMethod::contiguous, "contiguous"},
                                                       {PartitionMethod::metis, "metis"}};

std::size_t at(std::int64_t i) { return static_cast<std::size_t>(i); }

std::vector<std::int32_t> identity(std::int32_t n) {
  std::vector<std::int32_t> order(at(n));
  for (std::int32_t i = 0; i < n; ++i) order[at(i)] = i;
  return order;
}

/// Renumbers rows by part, stably (a counting sort): the partition's offsets are the part sizes' prefix sums.
RowPartition order_by_part(const std::vector<std::int32_t>& part, int ranks, std::vector<std::int32_t>& new_to_old) {
  RowPartition p;
  p.offsets.assign(at(ranks) + 1, 0);
  for (const std::int32_t r : part) ++p.offsets[at(r) + 1];
  for (int r = 0; r < ranks; ++r) p.offsets[at(r) + 1] += p.offsets[at(r)];
  std::vector<std::int32_t> next(p.offsets.begin(), p.offsets.end() - 1);
  new_to_old.assign(part.size(), 0);
  for (std::size_t i = 0; i < part.size(); ++i) new_to_old[at(next[at(part[i])]++)] = static_cast<std::int32_t>(i);
  return p;
}

}  // namespace

const char* partition_method_name(PartitionMethod method) noexcept { return detail::name_in(kMethods, method); }

PartitionMethod partition_method_from_name(const std::string& name) {
  return detail::value_in(kMethods, name, "partition method");
}

bool metis_available() noexcept {
#ifdef BCSR24_HAS_METIS
  return true;
#else
  return false;
#endif
}

RowPartition partition_rows(const CsrMatrix& a, int ranks, PartitionMethod method, const detail::PartitionCost& cost,
                            std::vector<std::int32_t>& new_to_old, PartitionMethod* used) {
  const bool square = a.rows == a.cols;
  if (method == PartitionMethod::automatic)
    method = metis_available() && square ? PartitionMethod::metis : PartitionMethod::contiguous;
  // The byte-balanced split checks ranks, the cost and row_ptr, whichever method runs.
  RowPartition contiguous = detail::partition_rows_by_bytes(a, ranks, cost);
  if (method == PartitionMethod::metis) {
    if (!square)
      throw InvalidArgument("partition method metis: A is " + std::to_string(a.rows) + " x " + std::to_string(a.cols) +
                            "; METIS partitions the graph of a square matrix (use contiguous)");
    if (!metis_available())
      throw NotSupported("partition method metis: this build of bcsr24 has no METIS (configure with "
                         "-DBCSR24_WITH_METIS=ON and libmetis-dev installed); use contiguous");
    validate_csr(a);
    // One rank, or no more rows than ranks: nothing to choose, the contiguous split is already optimal.
    if (ranks > 1 && a.rows > ranks) {
      if (used) *used = PartitionMethod::metis;
      return order_by_part(distributed::metis_row_parts(a, ranks, cost), ranks, new_to_old);
    }
  }
  if (used) *used = PartitionMethod::contiguous;
  new_to_old = identity(a.rows);
  return contiguous;
}

std::vector<std::int32_t> invert_permutation(const std::vector<std::int32_t>& permutation) {
  const std::int64_t n = static_cast<std::int64_t>(permutation.size());
  std::vector<std::int32_t> inverse(permutation.size(), -1);
  for (std::int64_t i = 0; i < n; ++i) {
    const std::int32_t v = permutation[at(i)];
    if (v < 0 || v >= n)
      throw InvalidArgument("invert_permutation: entry " + std::to_string(i) + " is " + std::to_string(v) +
                            ", outside 0 .. " + std::to_string(n - 1));
    if (inverse[at(v)] != -1)
      throw InvalidArgument("invert_permutation: " + std::to_string(v) + " appears twice (entries " +
                            std::to_string(inverse[at(v)]) + " and " + std::to_string(i) + ")");
    inverse[at(v)] = static_cast<std::int32_t>(i);
  }
  return inverse;
}

CsrMatrix extract_permuted_rows(const CsrMatrix& a, const std::vector<std::int32_t>& new_to_old,
                                const std::vector<std::int32_t>& old_to_new, std::int32_t begin, std::int32_t end) {
  if (a.rows != a.cols || a.row_ptr.size() != at(a.rows) + 1)
    throw InvalidArgument("extract_permuted_rows: A is " + std::to_string(a.rows) + " x " + std::to_string(a.cols) +
                          " with " + std::to_string(a.row_ptr.size()) +
                          " row offsets; a symmetric permutation needs a square CSR matrix");
  if (new_to_old.size() != at(a.rows) || old_to_new.size() != at(a.rows))
    throw InvalidArgument("extract_permuted_rows: permutations of " + std::to_string(new_to_old.size()) + " and " +
                          std::to_string(old_to_new.size()) + " entries for " + std::to_string(a.rows) + " rows");
  if (begin < 0 || begin > end || end > a.rows)
    throw InvalidArgument("extract_permuted_rows: rows [" + std::to_string(begin) + ", " + std::to_string(end) +
                          ") are not inside [0, " + std::to_string(a.rows) + "]");
  CsrMatrix m;
  m.rows = end - begin;
  m.cols = a.cols;
  m.row_ptr.assign(at(m.rows) + 1, 0);
  std::int64_t entries = 0;
  for (std::int32_t i = begin; i < end; ++i) {
    const std::int32_t old = new_to_old[at(i)];
    entries += a.row_ptr[at(old) + 1] - a.row_ptr[at(old)];
    m.row_ptr[at(i - begin) + 1] = static_cast<std::int32_t>(entries);
  }
  m.col_idx.resize(at(entries));
  m.values.resize(at(entries));
  std::vector<std::pair<std::int32_t, double>> row;
  for (std::int32_t i = begin; i < end; ++i) {
    const std::int32_t old = new_to_old[at(i)];
    row.clear();
    for (std::int32_t p = a.row_ptr[at(old)]; p < a.row_ptr[at(old) + 1]; ++p)
      row.emplace_back(old_to_new[at(a.col_idx[at(p)])], a.values[at(p)]);
    // Columns are unique in A and the renumbering is a bijection: sorting by column alone is deterministic.
    std::sort(row.begin(), row.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
    std::int64_t out = m.row_ptr[at(i - begin)];
    for (const auto& [c, v] : row) {
      m.col_idx[at(out)] = c;
      m.values[at(out)] = v;
      ++out;
    }
  }
  return m;
}

}  // namespace bcsr24
