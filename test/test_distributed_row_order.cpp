// Distributed operator, host side: rows assigned to ranks by PartitionMethod (contiguous, METIS) and renumbered so
// that each rank's rows are contiguous. The key property: on a randomly numbered 2-D grid, METIS's halo is a small
// fraction of the contiguous split's (which cuts almost every edge) and close to the halo of the grid's own slabs.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

#include "bcsr24/csr_matrix.hpp"
#include "bcsr24/distributed_partition.hpp"
#include "bcsr24/error.hpp"
#include "bcsr24_testkit/mesh.hpp"
#include "distributed/halo_plan.hpp"
#include "distributed_test_names.hpp"
#include "test_support.hpp"

using namespace bcsr24;
using bcsr24::test::scattered_csr;
using bcsr24::test::test_seed;

namespace {

std::size_t at(std::int64_t i) { return static_cast<std::size_t>(i); }

/// A 2-D 5-point grid of nx x ny nodes (one unknown each), lexicographic or randomly numbered.
CsrMatrix grid_2d(std::int32_t nx, std::int32_t ny, NodeOrder order) {
  MeshSpec spec;
  spec.nx = nx;
  spec.ny = ny;
  spec.nz = 1;
  spec.dofs_per_node = 1;
  spec.stencil = 7;
  spec.order = order;
  spec.seed = 7;
  return generate_mesh_matrix(spec);
}

/// Halo rows summed over ranks: for every rank, the distinct columns of its rows owned by other ranks.
std::int64_t total_halo_rows(const CsrMatrix& a, const RowPartition& p) {
  std::int64_t total = 0;
  for (const RankBlock& b : detail::split_matrix(a, p, p)) total += b.halo_cols();
  return total;
}

/// P A P^T for a whole matrix.
CsrMatrix permuted(const CsrMatrix& a, const std::vector<std::int32_t>& new_to_old) {
  return extract_permuted_rows(a, new_to_old, invert_permutation(new_to_old), 0, a.rows);
}

std::int64_t rank_nnz(const CsrMatrix& a, const RowPartition& p, int r) {
  return std::int64_t{a.row_ptr[at(p.end(r))]} - a.row_ptr[at(p.begin(r))];
}

/// Largest rank's entries over the mean.
double nnz_imbalance(const CsrMatrix& a, const RowPartition& p) {
  std::int64_t largest = 0;
  for (int r = 0; r < p.ranks(); ++r) largest = std::max(largest, rank_nnz(a, p, r));
  return double(largest) * p.ranks() / double(a.nnz());
}

}  // namespace

TEST_CASE("partition method names round trip and unknown names are refused", "[distributed]") {
  for (const PartitionMethod m : {PartitionMethod::automatic, PartitionMethod::contiguous, PartitionMethod::metis})
    CHECK(partition_method_from_name(partition_method_name(m)) == m);
  BCSR24_CHECK_INVALID(partition_method_from_name("scotch"), "expected automatic, contiguous or metis");
}

TEST_CASE("invert_permutation and extract_permuted_rows: P A P^T entry by entry, and refused inputs", "[distributed]") {
  const CsrMatrix a = scattered_csr(37, 37, 5, test_seed(11));
  std::vector<std::int32_t> new_to_old(37);
  std::iota(new_to_old.begin(), new_to_old.end(), 0);
  std::shuffle(new_to_old.begin(), new_to_old.end(), std::mt19937_64(test_seed(12)));
  const std::vector<std::int32_t> old_to_new = invert_permutation(new_to_old);
  for (std::int32_t i = 0; i < 37; ++i) CHECK(new_to_old[at(old_to_new[at(i)])] == i);
  CHECK(invert_permutation(old_to_new) == new_to_old);

  const CsrMatrix b = permuted(a, new_to_old);
  REQUIRE_NOTHROW(validate_csr(b));
  REQUIRE(b.nnz() == a.nnz());
  int wrong = 0;
  for (std::int32_t i = 0; i < a.rows; ++i)
    for (std::int32_t p = a.row_ptr[at(i)]; p < a.row_ptr[at(i) + 1]; ++p) {
      // a(i, j) must be b(new i, new j).
      const std::int32_t ni = old_to_new[at(i)], nj = old_to_new[at(a.col_idx[at(p)])];
      const auto first = b.col_idx.begin() + b.row_ptr[at(ni)], last = b.col_idx.begin() + b.row_ptr[at(ni) + 1];
      const auto hit = std::lower_bound(first, last, nj);
      if (hit == last || *hit != nj || b.values[at(hit - b.col_idx.begin())] != a.values[at(p)]) ++wrong;
    }
  CHECK(wrong == 0);
  // A slice is the same rows of the whole.
  const CsrMatrix slice = extract_permuted_rows(a, new_to_old, old_to_new, 10, 20);
  CHECK(slice.rows == 10);
  CHECK(slice.col_idx == std::vector<std::int32_t>(b.col_idx.begin() + b.row_ptr[10], b.col_idx.begin() + b.row_ptr[20]));

  BCSR24_CHECK_INVALID(invert_permutation({0, 2, 2}), "2 appears twice");
  BCSR24_CHECK_INVALID(invert_permutation({0, 3, 1}), "outside 0 .. 2");
  BCSR24_CHECK_INVALID(extract_permuted_rows(a, new_to_old, old_to_new, 20, 10), "rows [20, 10)");
  BCSR24_CHECK_INVALID(extract_permuted_rows(scattered_csr(5, 6, 2, 1), {0, 1, 2, 3, 4}, {0, 1, 2, 3, 4}, 0, 5),
                       "square");
}

TEST_CASE("take_rank_rows and put_rank_rows move a block into the operator's order and back", "[distributed]") {
  const CsrMatrix a = grid_2d(17, 13, NodeOrder::random);
  for (const PartitionMethod method : {PartitionMethod::contiguous, PartitionMethod::metis}) {
    if (method == PartitionMethod::metis && !metis_available()) continue;
    for (int ranks = 1; ranks <= 5; ++ranks) {
      CAPTURE(partition_method_name(method), ranks);
      std::vector<std::int32_t> order;
      const RowPartition p = partition_rows(a, ranks, method, PartitionCost{}, order);
      REQUIRE_NOTHROW(validate_partition(p, a.rows));
      REQUIRE(invert_permutation(order).size() == at(a.rows));  // a permutation
      constexpr std::int32_t k = 3;
      constexpr std::int64_t ld = 4, ld_mine = 5;  // padded on both sides
      std::vector<double> x(at(a.rows) * ld, -1.0), back(at(a.rows) * ld, -7.0);
      for (std::int32_t i = 0; i < a.rows; ++i)
        for (std::int32_t c = 0; c < k; ++c) x[at(i * ld + c)] = i * 10.0 + c;
      const CsrMatrix b = permuted(a, order);
      for (int r = 0; r < ranks; ++r) {
        std::vector<double> mine(at(p.count(r)) * ld_mine, 0.0);
        take_rank_rows(x.data(), ld, k, p, order, r, mine.data(), ld_mine);
        for (std::int32_t j = 0; j < p.count(r); ++j) CHECK(mine[at(j * ld_mine)] == order[at(p.begin(r) + j)] * 10.0);
        put_rank_rows(mine.data(), ld_mine, k, p, order, r, back.data(), ld);
      }
      for (std::int32_t i = 0; i < a.rows; ++i)
        for (std::int32_t c = 0; c < k; ++c) CHECK(back[at(i * ld + c)] == x[at(i * ld + c)]);
      // The empty order is the identity.
      std::vector<double> mine(at(p.count(0)) * k);
      take_rank_rows(x.data(), ld, k, p, {}, 0, mine.data(), k);
      if (p.count(0) > 0) CHECK(mine[0] == p.begin(0) * 10.0);
      // A product in the operator's numbering, moved back, is the product in the caller's.
      std::vector<double> y(at(a.rows), 0.0), y_permuted(at(a.rows), 0.0), xp(at(a.rows));
      for (std::int32_t i = 0; i < a.rows; ++i) xp[at(i)] = x[at(order[at(i)] * ld)];
      for (std::int32_t i = 0; i < a.rows; ++i)
        for (std::int32_t q = a.row_ptr[at(i)]; q < a.row_ptr[at(i) + 1]; ++q)
          y[at(i)] += a.values[at(q)] * x[at(a.col_idx[at(q)] * ld)];
      for (std::int32_t i = 0; i < b.rows; ++i)
        for (std::int32_t q = b.row_ptr[at(i)]; q < b.row_ptr[at(i) + 1]; ++q)
          y_permuted[at(i)] += b.values[at(q)] * xp[at(b.col_idx[at(q)])];
      int wrong = 0;
      for (std::int32_t i = 0; i < a.rows; ++i)
        if (std::abs(y_permuted[at(i)] - y[at(order[at(i)])]) > 1e-12 * (1.0 + std::abs(y[at(order[at(i)])]))) ++wrong;
      CHECK(wrong == 0);
    }
  }
}

TEST_CASE("contiguous partition_rows is the byte-balanced split in the caller's numbering", "[distributed]") {
  const CsrMatrix a = grid_2d(20, 9, NodeOrder::lexicographic);
  std::vector<std::int32_t> order;
  PartitionMethod used = PartitionMethod::metis;
  const RowPartition p = partition_rows(a, 3, PartitionMethod::contiguous, PartitionCost{}, order, &used);
  CHECK(used == PartitionMethod::contiguous);
  CHECK(p.offsets == partition_rows_by_bytes(a, 3).offsets);
  std::vector<std::int32_t> identity(at(a.rows));
  std::iota(identity.begin(), identity.end(), 0);
  CHECK(order == identity);
  // automatic: metis exactly when this build has METIS (A is square).
  partition_rows(a, 3, PartitionMethod::automatic, PartitionCost{}, order, &used);
  CHECK(used == (metis_available() ? PartitionMethod::metis : PartitionMethod::contiguous));
}

TEST_CASE("METIS on a randomly numbered 2-D grid: a far smaller halo than the contiguous split, balanced entries",
          "[distributed][metis]") {
  if (!metis_available()) {
    std::vector<std::int32_t> order;
    CHECK_THROWS_AS(partition_rows(grid_2d(8, 8, NodeOrder::random), 2, PartitionMethod::metis, {}, order),
                    NotSupported);
    return;
  }
  const CsrMatrix natural = grid_2d(96, 80, NodeOrder::lexicographic);
  const CsrMatrix scrambled = grid_2d(96, 80, NodeOrder::random);
  for (const int ranks : {2, 3, 4, 8}) {
    CAPTURE(ranks);
    const std::int64_t slabs = total_halo_rows(natural, partition_rows_by_bytes(natural, ranks));
    const std::int64_t contiguous = total_halo_rows(scrambled, partition_rows_by_bytes(scrambled, ranks));
    std::vector<std::int32_t> order;
    PartitionMethod used = PartitionMethod::contiguous;
    const RowPartition p = partition_rows(scrambled, ranks, PartitionMethod::metis, PartitionCost{}, order, &used);
    CHECK(used == PartitionMethod::metis);
    const CsrMatrix renumbered = permuted(scrambled, order);
    const std::int64_t metis = total_halo_rows(renumbered, p);
    CAPTURE(slabs, contiguous, metis);
    // A random numbering puts nearly every neighbour on another rank; METIS recovers a geometric split whose halo
    // is within a small factor of the slabs' (for 8 ranks its compact parts beat the 7 cuts of the slabs).
    CHECK(metis * 10 < contiguous);
    CHECK(metis <= slabs * 3 / 2);
    // Entries balanced within METIS's default 3% of the vertex weights, plus rounding on these small parts.
    CHECK(nnz_imbalance(renumbered, p) <= 1.06);
    for (int r = 0; r < ranks; ++r) CHECK(p.count(r) > 0);
    // Deterministic: the same call gives the same numbering.
    std::vector<std::int32_t> again;
    CHECK(partition_rows(scrambled, ranks, PartitionMethod::metis, PartitionCost{}, again).offsets == p.offsets);
    CHECK(again == order);
  }
}

TEST_CASE("METIS balances entries, not rows, on a power-law graph", "[distributed][metis]") {
  if (!metis_available()) return;
  const CsrMatrix graph = test::power_law_graph(3000, 0, 6, 5);
  for (const int ranks : {2, 4}) {
    CAPTURE(ranks);
    std::vector<std::int32_t> order;
    const RowPartition p = partition_rows(graph, ranks, PartitionMethod::metis, PartitionCost{}, order);
    const CsrMatrix renumbered = permuted(graph, order);
    CHECK(nnz_imbalance(renumbered, p) <= 1.10);
    CHECK(total_halo_rows(renumbered, p) <= total_halo_rows(graph, partition_rows_by_bytes(graph, ranks)));
  }
}

TEST_CASE("fewer rows than ranks, empty matrices and rectangular matrices", "[distributed]") {
  std::vector<std::int32_t> order;
  PartitionMethod used = PartitionMethod::metis;
  SECTION("no more rows than ranks: the byte-balanced split with empty ranks, whatever the method") {
    const CsrMatrix a = scattered_csr(3, 3, 2, 1);
    for (const PartitionMethod m : {PartitionMethod::automatic, PartitionMethod::contiguous, PartitionMethod::metis}) {
      if (m == PartitionMethod::metis && !metis_available()) continue;
      const RowPartition p = partition_rows(a, 5, m, PartitionCost{}, order, &used);
      CHECK(used == PartitionMethod::contiguous);
      CHECK(p.offsets == partition_rows_by_bytes(a, 5).offsets);
      CHECK(order == std::vector<std::int32_t>{0, 1, 2});
      int empty = 0;
      for (int r = 0; r < 5; ++r) empty += p.count(r) == 0;
      CHECK(empty >= 2);
    }
  }
  SECTION("an empty matrix") {
    const CsrMatrix empty;
    const RowPartition p = partition_rows(empty, 4, PartitionMethod::automatic, PartitionCost{}, order, &used);
    CHECK(p.offsets == std::vector<std::int32_t>{0, 0, 0, 0, 0});
    CHECK(order.empty());
  }
  SECTION("rectangular: contiguous for automatic, refused for metis") {
    const CsrMatrix a = scattered_csr(30, 40, 3, 2);
    partition_rows(a, 3, PartitionMethod::automatic, PartitionCost{}, order, &used);
    CHECK(used == PartitionMethod::contiguous);
    BCSR24_CHECK_INVALID(partition_rows(a, 3, PartitionMethod::metis, PartitionCost{}, order), "square matrix");
  }
  SECTION("invalid ranks and costs, whatever the method") {
    const CsrMatrix a = scattered_csr(30, 30, 3, 2);
    BCSR24_CHECK_INVALID(partition_rows(a, 0, PartitionMethod::metis, PartitionCost{}, order), "ranks is 0");
    BCSR24_CHECK_INVALID(partition_rows(a, 2, PartitionMethod::metis, PartitionCost{0, 0}, order), "both 0");
  }
}
