// Reverse Cuthill-McKee: permutations on every shape, supervariables of multi-dof meshes, bandwidth recovered
// from scrambled grids, empty rows last, determinism; inverse_permutation and permuted_bandwidth.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <numeric>
#include <random>
#include <vector>

#include "bcsr24/csr_matrix.hpp"
#include "bcsr24/error.hpp"
#include "format/reorder.hpp"
#include "test_support.hpp"

using namespace bcsr24;

namespace {

/// Stencil of a structured grid: the 7-point (faces) or 27-point (faces, edges, corners) neighbourhood.
enum class Stencil { kFaces, kFull };

/// Grid "Laplacian" pattern on nx x ny x nz nodes numbered lexicographically (x fastest), every node coupling
/// all `dofs` unknowns of itself and of its stencil neighbours, as a FEM matrix of a vector field does. Rows
/// of one node are consecutive, so the natural bandwidth is dofs * (nx * ny + nx + 2) - 1 for kFull.
CsrMatrix grid_matrix(std::int32_t nx, std::int32_t ny, std::int32_t nz, Stencil stencil, std::int32_t dofs) {
  const std::int32_t rows = nx * ny * nz * dofs;
  std::vector<std::int32_t> row, col;
  std::vector<double> value;
  auto node = [&](std::int32_t x, std::int32_t y, std::int32_t z) { return (z * ny + y) * nx + x; };
  for (std::int32_t z = 0; z < nz; ++z)
    for (std::int32_t y = 0; y < ny; ++y)
      for (std::int32_t x = 0; x < nx; ++x)
        for (std::int32_t dz = -1; dz <= 1; ++dz)
          for (std::int32_t dy = -1; dy <= 1; ++dy)
            for (std::int32_t dx = -1; dx <= 1; ++dx) {
              const int offsets = std::abs(dx) + std::abs(dy) + std::abs(dz);
              if (stencil == Stencil::kFaces && offsets > 1) continue;
              const std::int32_t X = x + dx, Y = y + dy, Z = z + dz;
              if (X < 0 || X >= nx || Y < 0 || Y >= ny || Z < 0 || Z >= nz) continue;
              for (std::int32_t a = 0; a < dofs; ++a)
                for (std::int32_t b = 0; b < dofs; ++b) {
                  row.push_back(node(x, y, z) * dofs + a);
                  col.push_back(node(X, Y, Z) * dofs + b);
                  value.push_back(offsets == 0 && a == b ? 6.0 : -1.0);
                }
            }
  return csr_from_triplets(rows, rows, row, col, value);
}

/// P A P^T where original row/column i moves to position new_position[i].
CsrMatrix permute_symmetric(const CsrMatrix& a, const std::vector<std::int32_t>& new_position) {
  std::vector<std::int32_t> row, col;
  for (std::int32_t r = 0; r < a.rows; ++r)
    for (std::int32_t p = a.row_ptr[std::size_t(r)]; p < a.row_ptr[std::size_t(r) + 1]; ++p) {
      row.push_back(new_position[std::size_t(r)]);
      col.push_back(new_position[std::size_t(a.col_idx[std::size_t(p)])]);
    }
  return csr_from_triplets(a.rows, a.cols, row, col, a.values);
}

std::vector<std::int32_t> random_permutation(std::int32_t n, std::uint64_t seed) {
  std::vector<std::int32_t> p(std::size_t(n), 0);
  std::iota(p.begin(), p.end(), 0);
  std::mt19937_64 rng(seed);
  std::shuffle(p.begin(), p.end(), rng);
  return p;
}

CsrMatrix pattern_matrix(std::int32_t rows, std::int32_t cols, const std::vector<std::int32_t>& row,
                         const std::vector<std::int32_t>& col) {
  return csr_from_triplets(rows, cols, row, col, std::vector<double>(row.size(), 1.0));
}

/// Random pattern with about `per_row` entries in each row (duplicates merge); no row left empty.
CsrMatrix random_pattern(std::int32_t rows, std::int32_t cols, int per_row, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<std::int32_t> pick(0, cols - 1);
  std::vector<std::int32_t> row, col;
  for (std::int32_t r = 0; r < rows; ++r)
    for (int k = 0; k < per_row; ++k) {
      row.push_back(r);
      col.push_back(pick(rng));
    }
  return pattern_matrix(rows, cols, row, col);
}

bool is_permutation_of_rows(const std::vector<std::int32_t>& order, std::int32_t rows) {
  if (order.size() != std::size_t(rows)) return false;
  std::vector<char> seen(std::size_t(rows), 0);
  for (const std::int32_t r : order) {
    if (r < 0 || r >= rows || seen[std::size_t(r)]) return false;
    seen[std::size_t(r)] = 1;
  }
  return true;
}

/// The bandwidths of a grid in its own order, randomly permuted (`seed`) and reordered by RCM, and the ordering.
struct Recovery {
  std::int64_t natural = 0, scrambled = 0, reordered = 0;
  RowOrdering ordering;
  std::int32_t rows = 0;
};

Recovery recover_band(const CsrMatrix& grid, std::uint64_t seed) {
  Recovery r;
  r.natural = permuted_bandwidth(grid, {});
  const CsrMatrix a = permute_symmetric(grid, random_permutation(grid.rows, seed));
  r.scrambled = permuted_bandwidth(a, {});
  r.ordering = reverse_cuthill_mckee(a);
  REQUIRE(is_permutation_of_rows(r.ordering.order, a.rows));
  r.reordered = permuted_bandwidth(a, r.ordering.order);
  r.rows = a.rows;
  return r;
}

}  // namespace

TEST_CASE("reverse_cuthill_mckee returns a permutation of the rows for every shape", "[reorder]") {
  const std::uint64_t seed = test::test_seed(2024);
  CAPTURE(seed);

  SECTION("square grid") {
    const CsrMatrix a = grid_matrix(9, 7, 1, Stencil::kFaces, 1);
    const RowOrdering o = reverse_cuthill_mckee(a);
    CHECK(is_permutation_of_rows(o.order, a.rows));
    CHECK(o.symmetric);
    CHECK(o.components == 1);
    CHECK(o.supervariables == a.rows);
  }
  SECTION("rectangular with more rows than columns") {
    const CsrMatrix a = random_pattern(60, 17, 3, seed);
    const RowOrdering o = reverse_cuthill_mckee(a);
    CHECK(is_permutation_of_rows(o.order, a.rows));
    CHECK_FALSE(o.symmetric);
    CHECK(o.supervariables <= a.rows);
  }
  SECTION("rectangular with more columns than rows") {
    const CsrMatrix a = random_pattern(13, 80, 4, seed + 1);
    const RowOrdering o = reverse_cuthill_mckee(a);
    CHECK(is_permutation_of_rows(o.order, a.rows));
    CHECK_FALSE(o.symmetric);
  }
  SECTION("random square pattern") {
    const CsrMatrix a = random_pattern(200, 200, 3, seed + 2);
    const RowOrdering o = reverse_cuthill_mckee(a);
    CHECK(is_permutation_of_rows(o.order, a.rows));
    CHECK(o.symmetric);
  }
  SECTION("0 x 0 and 0-entry matrices") {
    const RowOrdering empty = reverse_cuthill_mckee(pattern_matrix(0, 0, {}, {}));
    CHECK(empty.order.empty());
    CHECK(empty.supervariables == 0);
    CHECK(empty.components == 0);

    const RowOrdering zeros = reverse_cuthill_mckee(pattern_matrix(4, 4, {}, {}));
    CHECK(zeros.order == std::vector<std::int32_t>{0, 1, 2, 3});
    CHECK(zeros.components == 4);

    const RowOrdering no_columns = reverse_cuthill_mckee(pattern_matrix(3, 0, {}, {}));
    CHECK(no_columns.order == std::vector<std::int32_t>{0, 1, 2});
    const RowOrdering no_rows = reverse_cuthill_mckee(pattern_matrix(0, 5, {}, {}));
    CHECK(no_rows.order.empty());
  }
}

TEST_CASE("reverse_cuthill_mckee puts empty rows last and orders components by their smallest row", "[reorder]") {
  SECTION("square: rows empty in A + A^T go last, a diagonal-only row is an isolated component") {
    // Path 6 - 2 - 4 (entries (6,2) and (2,4) only), row 5 holds just its diagonal, rows 0 1 3 7 are empty in
    // A and in A^T.
    const CsrMatrix a = pattern_matrix(8, 8, {6, 2, 5}, {2, 4, 5});
    const RowOrdering o = reverse_cuthill_mckee(a);
    REQUIRE(is_permutation_of_rows(o.order, 8));
    // Component {2, 4, 6} first (smallest row 2), then {5}, then the empty rows in ascending order.
    const std::vector<std::int32_t> head(o.order.begin(), o.order.begin() + 3);
    CHECK((head == std::vector<std::int32_t>{6, 2, 4} || head == std::vector<std::int32_t>{4, 2, 6}));
    CHECK(o.order[3] == 5);
    CHECK(std::vector<std::int32_t>(o.order.begin() + 4, o.order.end()) == std::vector<std::int32_t>{0, 1, 3, 7});
    CHECK(o.components == 6);  // path, row 5, four empty rows
  }
  SECTION("square: a row empty in A but with entries in its column is not empty") {
    // Row 1 has no entries, but (0,1) links it to row 0 in A + A^T.
    const CsrMatrix a = pattern_matrix(3, 3, {0, 0}, {0, 1});
    const RowOrdering o = reverse_cuthill_mckee(a);
    REQUIRE(is_permutation_of_rows(o.order, 3));
    CHECK(o.order.back() == 2);
    CHECK(o.components == 2);
  }
  SECTION("disconnected square graph: two interleaved paths") {
    // Even rows form one path, odd rows another: 0-2-4-6-8 and 1-3-5-7-9.
    std::vector<std::int32_t> row, col;
    for (std::int32_t r = 0; r + 2 < 10; ++r) {
      row.push_back(r);
      col.push_back(r + 2);
      row.push_back(r + 2);
      col.push_back(r);
    }
    const CsrMatrix a = pattern_matrix(10, 10, row, col);
    const RowOrdering o = reverse_cuthill_mckee(a);
    REQUIRE(is_permutation_of_rows(o.order, 10));
    CHECK(o.components == 2);
    for (std::size_t i = 0; i < 5; ++i) CHECK(o.order[i] % 2 == 0);
    // Each path comes out end to end, so neighbours in the path are neighbours in the order.
    CHECK(permuted_bandwidth(a, o.order) == 1);
  }
  SECTION("rectangular: empty rows last, rows of one column block together") {
    // Five blocks of 3 columns with 7 rows each, rows shuffled; 3 empty rows mixed in.
    const std::uint64_t seed = test::test_seed(77);
    CAPTURE(seed);
    std::mt19937_64 rng(seed);
    const std::int32_t blocks = 5, rows_per_block = 7, empty_rows = 3;
    const std::int32_t rows = blocks * rows_per_block + empty_rows;
    const std::vector<std::int32_t> slot = random_permutation(rows, seed + 1);
    std::vector<std::int32_t> block_of(std::size_t(rows), -1);
    std::vector<std::int32_t> row, col;
    for (std::int32_t b = 0; b < blocks; ++b)
      for (std::int32_t k = 0; k < rows_per_block; ++k) {
        const std::int32_t r = slot[std::size_t(b * rows_per_block + k)];
        block_of[std::size_t(r)] = b;
        // The block's first column and any of the other two: every block is one connected component.
        const unsigned subset = 1u | unsigned(rng() % 4) << 1;
        for (std::int32_t c = 0; c < 3; ++c)
          if (subset & (1u << c)) {
            row.push_back(r);
            col.push_back(3 * b + c);
          }
      }
    const CsrMatrix a = pattern_matrix(rows, 3 * blocks + 4, row, col);  // 4 empty columns too
    const RowOrdering o = reverse_cuthill_mckee(a);
    REQUIRE(is_permutation_of_rows(o.order, rows));
    CHECK_FALSE(o.symmetric);
    CHECK(o.components == blocks + empty_rows);
    CHECK(o.supervariables <= blocks * 4 + empty_rows);  // at most 4 distinct patterns per block
    for (std::int32_t i = 0; i < rows; ++i) {
      const std::int32_t b = block_of[std::size_t(o.order[std::size_t(i)])];
      if (i >= blocks * rows_per_block) {
        CHECK(b == -1);
      } else {
        CHECK(b != -1);
        if (i % rows_per_block != 0) CHECK(b == block_of[std::size_t(o.order[std::size_t(i) - 1])]);
      }
    }
  }
}

TEST_CASE("reverse_cuthill_mckee merges the dofs of a mesh node into one supervariable", "[reorder]") {
  const CsrMatrix grid = grid_matrix(5, 4, 3, Stencil::kFaces, 3);
  const std::uint64_t seed = test::test_seed(5);
  CAPTURE(seed);
  // Scrambled, so that a node's rows are no longer adjacent in the input.
  const CsrMatrix a = permute_symmetric(grid, random_permutation(grid.rows, seed));
  const std::vector<std::int32_t> node_of_row = [&] {
    // permute_symmetric moved original row i to new_position[i]; recover the node of every new row.
    const std::vector<std::int32_t> new_position = random_permutation(grid.rows, seed);
    std::vector<std::int32_t> node(std::size_t(grid.rows));
    for (std::int32_t i = 0; i < grid.rows; ++i) node[std::size_t(new_position[std::size_t(i)])] = i / 3;
    return node;
  }();

  const RowOrdering o = reverse_cuthill_mckee(a);
  REQUIRE(is_permutation_of_rows(o.order, a.rows));
  CHECK(o.symmetric);
  CHECK(o.supervariables == a.rows / 3);
  CHECK(o.components == 1);
  for (std::size_t i = 0; i < o.order.size(); i += 3) {
    CHECK(node_of_row[std::size_t(o.order[i])] == node_of_row[std::size_t(o.order[i + 1])]);
    CHECK(node_of_row[std::size_t(o.order[i])] == node_of_row[std::size_t(o.order[i + 2])]);
    CHECK(o.order[i] < o.order[i + 1]);  // a supervariable's rows in ascending original order
    CHECK(o.order[i + 1] < o.order[i + 2]);
  }
}

TEST_CASE("reverse_cuthill_mckee merges rows of a rectangular matrix with identical patterns", "[reorder]") {
  // Rows 0 3 5 hold {0, 1}, rows 1 4 hold {1, 2}, row 2 holds {3}, row 6 is empty; 5 columns, column 4 empty.
  const CsrMatrix a = pattern_matrix(7, 5, {0, 0, 3, 3, 5, 5, 1, 1, 4, 4, 2}, {0, 1, 0, 1, 0, 1, 1, 2, 1, 2, 3});
  const RowOrdering o = reverse_cuthill_mckee(a);
  REQUIRE(is_permutation_of_rows(o.order, 7));
  CHECK_FALSE(o.symmetric);
  CHECK(o.supervariables == 4);  // {0 3 5}, {1 4}, {2}, and the empty row on its own
  CHECK(o.components == 3);      // rows sharing column 1, row 2, row 6
  // The first component comes first, each supervariable's rows together and ascending; then row 2, then 6.
  const std::vector<std::int32_t> head(o.order.begin(), o.order.begin() + 5);
  CHECK((head == std::vector<std::int32_t>{0, 3, 5, 1, 4} || head == std::vector<std::int32_t>{1, 4, 0, 3, 5}));
  CHECK(o.order[5] == 2);
  CHECK(o.order[6] == 6);
}

TEST_CASE("reverse_cuthill_mckee recovers a narrow band from randomly permuted grids", "[reorder]") {
  const std::uint64_t seed = test::test_seed(31);
  CAPTURE(seed);

  SECTION("2-D 5-point grid, 40 x 40") {
    const Recovery r = recover_band(grid_matrix(40, 40, 1, Stencil::kFaces, 1), seed);
    CAPTURE(r.natural, r.scrambled, r.reordered);
    REQUIRE(r.natural == 40);
    CHECK(r.scrambled > 1000);
    CHECK(r.reordered <= 2 * r.natural);
  }
  SECTION("3-D 27-point grid with 3 dofs, 10 x 9 x 8") {
    const Recovery r = recover_band(grid_matrix(10, 9, 8, Stencil::kFull, 3), seed + 1);
    CAPTURE(r.natural, r.scrambled, r.reordered);
    REQUIRE(r.natural == 3 * (10 * 9 + 10 + 1) + 2);
    CHECK(r.scrambled > 5 * r.natural);
    CHECK(r.reordered <= 2 * r.natural);  // level sets from a corner: at most 169 nodes (507 rows) in this box
    CHECK(r.ordering.supervariables == r.rows / 3);
  }
  SECTION("3-D 7-point grid, 12 x 12 x 12") {
    const Recovery r = recover_band(grid_matrix(12, 12, 12, Stencil::kFaces, 1), seed + 2);
    CAPTURE(r.natural, r.scrambled, r.reordered);
    REQUIRE(r.natural == 144);
    CHECK(r.scrambled > 5 * r.natural);
    CHECK(r.reordered <= 2 * r.natural);
  }
}

TEST_CASE("reverse_cuthill_mckee orders a nonsymmetric pattern by A + A^T", "[reorder]") {
  // A scrambled lower bidiagonal: entry (i+1, i) but never (i, i+1). A + A^T is a path, which RCM lays out
  // end to end.
  const std::int32_t n = 50;
  const std::uint64_t seed = test::test_seed(3);
  CAPTURE(seed);
  std::vector<std::int32_t> row, col;
  for (std::int32_t i = 0; i < n; ++i) {
    row.push_back(i);
    col.push_back(i);
    if (i + 1 < n) {
      row.push_back(i + 1);
      col.push_back(i);
    }
  }
  const CsrMatrix a = permute_symmetric(pattern_matrix(n, n, row, col), random_permutation(n, seed));
  const RowOrdering o = reverse_cuthill_mckee(a);
  REQUIRE(is_permutation_of_rows(o.order, n));
  CHECK(o.symmetric);
  CHECK(o.components == 1);
  CHECK(o.supervariables == n);  // closed neighbourhoods of a path differ (n > 2)
  CHECK(permuted_bandwidth(a, o.order) == 1);
}

TEST_CASE("reverse_cuthill_mckee is deterministic", "[reorder]") {
  const std::uint64_t seed = test::test_seed(8);
  CAPTURE(seed);
  const CsrMatrix grid = grid_matrix(7, 6, 5, Stencil::kFull, 2);
  const CsrMatrix a = permute_symmetric(grid, random_permutation(grid.rows, seed));
  const RowOrdering first = reverse_cuthill_mckee(a);
  const RowOrdering second = reverse_cuthill_mckee(CsrMatrix(a));
  CHECK(first.order == second.order);
  CHECK(first.supervariables == second.supervariables);
  CHECK(first.components == second.components);

  const CsrMatrix wide = random_pattern(40, 90, 3, seed + 1);
  CHECK(reverse_cuthill_mckee(wide).order == reverse_cuthill_mckee(wide).order);
}

TEST_CASE("reverse_cuthill_mckee handles a 1M-entry mesh matrix", "[reorder]") {
  // 17^3 nodes, 27-point stencil, 3 dofs: 14739 rows, 1.06M entries, scrambled.
  const CsrMatrix grid = grid_matrix(17, 17, 17, Stencil::kFull, 3);
  REQUIRE(grid.nnz() > 1000000);
  const CsrMatrix a = permute_symmetric(grid, random_permutation(grid.rows, test::test_seed(16)));
  const RowOrdering o = reverse_cuthill_mckee(a);
  REQUIRE(is_permutation_of_rows(o.order, a.rows));
  CHECK(o.supervariables == a.rows / 3);
  CHECK(o.components == 1);
  // From a corner the 27-point level sets are shells of three faces, about 3 N^2 nodes wide, so RCM lands
  // near 3x the lexicographic band here; the scrambled band spans almost the whole matrix.
  const std::int64_t natural = permuted_bandwidth(grid, {});
  const std::int64_t scrambled = permuted_bandwidth(a, {});
  const std::int64_t reordered = permuted_bandwidth(a, o.order);
  CAPTURE(natural, scrambled, reordered);
  CHECK(reordered <= 3 * natural);
  CHECK(5 * reordered < scrambled);
}

TEST_CASE("inverse_permutation inverts and rejects non-permutations", "[reorder]") {
  CHECK(inverse_permutation({2, 0, 3, 1}) == std::vector<std::int32_t>{1, 3, 0, 2});
  CHECK(inverse_permutation({}).empty());
  CHECK_THROWS_AS(inverse_permutation({0, 0}), InvalidArgument);
  CHECK_THROWS_AS(inverse_permutation({0, 2}), InvalidArgument);
  CHECK_THROWS_AS(inverse_permutation({-1, 0}), InvalidArgument);
}

TEST_CASE("permuted_bandwidth measures P A P^T, rows only when rectangular", "[reorder]") {
  // Arrow: row 0 couples to 3, row 3 to 0.
  const CsrMatrix a = pattern_matrix(4, 4, {0, 0, 1, 2, 3, 3}, {0, 3, 1, 2, 0, 3});
  CHECK(permuted_bandwidth(a, {}) == 3);
  CHECK(permuted_bandwidth(a, {0, 3, 1, 2}) == 1);  // rows 0 and 3 side by side
  CHECK_THROWS_AS(permuted_bandwidth(a, {0, 1}), InvalidArgument);

  // 2 x 5: the columns stay where they are.
  const CsrMatrix r = pattern_matrix(2, 5, {0, 1}, {4, 0});
  CHECK(permuted_bandwidth(r, {}) == 4);
  CHECK(permuted_bandwidth(r, {1, 0}) == 3);  // row 0 moves to position 1: |1 - 4|
  CHECK(permuted_bandwidth(pattern_matrix(0, 0, {}, {}), {}) == 0);
}
