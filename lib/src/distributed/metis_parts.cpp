// METIS k-way parts of the rows of a square matrix (see metis_parts.hpp): the symmetrised adjacency graph, the
// vertex weights that balance bytes, and the METIS options that make the result deterministic.
#include "metis_parts.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include "bcsr24/error.hpp"

#ifdef BCSR24_HAS_METIS
#include <metis.h>
#endif

namespace bcsr24::distributed {

#ifdef BCSR24_HAS_METIS

namespace {

std::size_t at(std::int64_t i) { return static_cast<std::size_t>(i); }

static_assert(IDXTYPEWIDTH == 32 || IDXTYPEWIDTH == 64, "METIS idx_t is 32 or 64 bits");
constexpr std::int64_t kMaxIdx = std::numeric_limits<idx_t>::max();

/// The graph of A + A^T without self loops, in METIS's CSR arrays: a row's neighbours are its own off-diagonal
/// columns and the rows that have it as a column. A symmetric pattern gives every edge twice before the
/// deduplication, so the temporary holds up to 2 nnz indices.
void symmetric_graph(const CsrMatrix& a, std::vector<idx_t>& xadj, std::vector<idx_t>& adjncy) {
  const std::int32_t n = a.rows;
  std::vector<std::int64_t> degree(at(n) + 1, 0);
  for (std::int32_t i = 0; i < n; ++i)
    for (std::int32_t p = a.row_ptr[at(i)]; p < a.row_ptr[at(i) + 1]; ++p) {
      const std::int32_t j = a.col_idx[at(p)];
      if (j == i) continue;
      ++degree[at(i) + 1];
      ++degree[at(j) + 1];
    }
  std::partial_sum(degree.begin(), degree.end(), degree.begin());
  if (degree.back() > kMaxIdx)
    throw SizeLimitError("METIS partition: the symmetrised graph has " + std::to_string(degree.back()) +
                         " adjacency entries, more than METIS's idx_t holds");
  std::vector<idx_t> both(at(degree.back()));
  std::vector<std::int64_t> fill(degree.begin(), degree.end() - 1);
  for (std::int32_t i = 0; i < n; ++i)
    for (std::int32_t p = a.row_ptr[at(i)]; p < a.row_ptr[at(i) + 1]; ++p) {
      const std::int32_t j = a.col_idx[at(p)];
      if (j == i) continue;
      both[at(fill[at(i)]++)] = j;
      both[at(fill[at(j)]++)] = i;
    }
  // Sort and deduplicate each row's neighbours, compacting in place.
  xadj.assign(at(n) + 1, 0);
  std::int64_t out = 0;
  for (std::int32_t i = 0; i < n; ++i) {
    const auto first = both.begin() + static_cast<std::ptrdiff_t>(degree[at(i)]);
    const auto last = both.begin() + static_cast<std::ptrdiff_t>(degree[at(i) + 1]);
    std::sort(first, last);
    const auto unique_end = std::unique(first, last);
    for (auto it = first; it != unique_end; ++it) both[at(out++)] = *it;
    xadj[at(i) + 1] = static_cast<idx_t>(out);
  }
  both.resize(at(out));
  adjncy = std::move(both);
}

/// Vertex weights: the row's bytes under `cost`, divided by the costs' common factor, and scaled down (rounding
/// up, never below 1) when the total would not leave METIS's sums room in idx_t.
std::vector<idx_t> vertex_weights(const CsrMatrix& a, const detail::PartitionCost& cost) {
  const std::int64_t common = std::gcd(cost.bytes_per_entry, cost.bytes_per_row);  // > 0: not both zero
  const std::int64_t per_entry = cost.bytes_per_entry / common, per_row = cost.bytes_per_row / common;
  std::vector<std::int64_t> bytes(at(a.rows));
  std::int64_t total = 0;
  for (std::int32_t i = 0; i < a.rows; ++i) {
    bytes[at(i)] = (std::int64_t{a.row_ptr[at(i) + 1]} - a.row_ptr[at(i)]) * per_entry + per_row;
    total += std::max<std::int64_t>(bytes[at(i)], 1);
  }
  // METIS adds weights in idx_t: keep the total below a quarter of its range.
  const std::int64_t limit = kMaxIdx / 4;
  const std::int64_t divisor = total > limit ? (total + limit - 1) / limit : 1;
  std::vector<idx_t> weights(at(a.rows));
  for (std::int32_t i = 0; i < a.rows; ++i)
    weights[at(i)] = static_cast<idx_t>(std::max<std::int64_t>((bytes[at(i)] + divisor - 1) / divisor, 1));
  return weights;
}

const char* metis_status_name(int status) {
  switch (status) {
    case METIS_ERROR_INPUT: return "METIS_ERROR_INPUT";
    case METIS_ERROR_MEMORY: return "METIS_ERROR_MEMORY";
    default: return "METIS_ERROR";
  }
}

}  // namespace

std::vector<std::int32_t> metis_row_parts(const CsrMatrix& a, int ranks, const detail::PartitionCost& cost) {
  std::vector<idx_t> xadj, adjncy;
  symmetric_graph(a, xadj, adjncy);
  std::vector<idx_t> vwgt = vertex_weights(a, cost);
  idx_t vertices = a.rows, constraints = 1, parts = ranks, objective = 0;
  idx_t options[METIS_NOPTIONS];
  METIS_SetDefaultOptions(options);
  options[METIS_OPTION_OBJTYPE] = METIS_OBJTYPE_VOL;  // the halo rows summed over ranks, not the cut entries
  options[METIS_OPTION_SEED] = kMetisSeed;
  options[METIS_OPTION_NUMBERING] = 0;
  std::vector<idx_t> part(at(a.rows), 0);
  // A graph without edges (a diagonal matrix) is still partitioned by weight; METIS gets a valid pointer anyway.
  if (adjncy.empty()) adjncy.push_back(0);
  const int status = METIS_PartGraphKway(&vertices, &constraints, xadj.data(), adjncy.data(),
                                         vwgt.data(), nullptr, nullptr, &parts, nullptr, nullptr, options, &objective,
                                         part.data());
  if (status != METIS_OK)
    throw Error(std::string("METIS_PartGraphKway failed (") + metis_status_name(status) + ") for " +
                std::to_string(a.rows) + " rows and " + std::to_string(ranks) + " parts");
  std::vector<std::int32_t> result(at(a.rows));
  for (std::int32_t i = 0; i < a.rows; ++i) {
    if (part[at(i)] < 0 || part[at(i)] >= ranks)
      throw Error("METIS_PartGraphKway returned part " + std::to_string(part[at(i)]) + " for row " +
                  std::to_string(i) + ", outside 0 .. " + std::to_string(ranks - 1));
    result[at(i)] = static_cast<std::int32_t>(part[at(i)]);
  }
  return result;
}

#else

std::vector<std::int32_t> metis_row_parts(const CsrMatrix&, int, const detail::PartitionCost&) {
  throw NotSupported("partition method metis: this build of bcsr24 has no METIS (configure with "
                     "-DBCSR24_WITH_METIS=ON and libmetis-dev installed), use contiguous");
}

#endif

}  // namespace bcsr24::distributed
