// Helpers shared by the tests: data locations, seeds, generated matrices and tolerances derived from the storage
// rounding (Eigen views: test_eigen.hpp).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "format/bcsr24_matrix.hpp"
#include "format/convert.hpp"
#include "bcsr24/csr_matrix.hpp"
#include "bcsr24_testkit/mesh.hpp"

/// Catch2 checks that `expr` throws InvalidArgument whose message contains `fragment` (a typed error that says what
/// is wrong).
#define BCSR24_CHECK_INVALID(expr, fragment)            \
  do {                                                  \
    CHECK_THROWS_AS(expr, InvalidArgument);             \
    CHECK_THROWS_WITH(expr, Catch::Contains(fragment)); \
  } while (false)

namespace bcsr24::test {

/// ../shared/data (or $BCSR24_SHARED_DATA) if it exists, else nullopt.
std::optional<std::string> shared_data_dir();
/// The project's data/ folder.
std::string project_data_dir();

/// Seed for random tests: $BCSR24_TEST_SEED if set, else `fallback`. Tests print the seed they use.
std::uint64_t test_seed(std::uint64_t fallback);

/// Conversion options with the given tile layout and row reordering (everything else default).
ConvertOptions convert_policy(TileLayout layout, Reordering reorder);

/// Scattered random CSR with empty rows and columns: `per_row` entries per row in random columns (values in
/// [-1, 1)), rows r with r % 7 == 3 left empty, columns c with c % 5 == 2 never used.
CsrMatrix scattered_csr(std::int32_t rows, std::int32_t cols, int per_row, std::uint64_t seed);

/// 40 x 70,003 matrix whose row 5 touches 70,000 columns (the other rows one each): its first 16-row band has
/// more than 2^16 distinct columns.
CsrMatrix wide_band_csr();

/// An XdYs matrix (synthetic.hpp): `dense_percent` of the tile positions dense, `sparse24_percent` 2:4.
CsrMatrix xdys_matrix(std::int32_t rows, std::int32_t cols, double dense_percent, double sparse24_percent,
                      std::uint64_t seed);
/// A random graph (synthetic.hpp) rows x cols (cols 0: square) with power-law row lengths of mean ~degree: a few
/// very long rows among short ones.
CsrMatrix power_law_graph(std::int32_t rows, std::int32_t cols, std::int32_t degree, std::uint64_t seed);

/// Entries gathered one at a time, then made a matrix by csr_from_triplets.
struct Triplets {
  std::vector<std::int32_t> row, col;
  std::vector<double> value;
  void add(std::int32_t r, std::int32_t c, double v) {
    row.push_back(r);
    col.push_back(c);
    value.push_back(v);
  }
  CsrMatrix csr(std::int32_t rows, std::int32_t cols) const { return csr_from_triplets(rows, cols, row, col, value); }
};

/// Triplets valued uniformly in [-1, 1) by `rng`, which also serves the caller's own random choices (columns), so
/// that one seed fixes the whole matrix.
struct RandomTriplets : Triplets {
  explicit RandomTriplets(std::uint64_t seed) : rng(seed) {}
  void add(std::int32_t r, std::int32_t c) { Triplets::add(r, c, uniform(rng)); }
  std::mt19937_64 rng;
  std::uniform_real_distribution<double> uniform{-1.0, 1.0};
};

/// The rows x cols matrix of the entries a row-major mask marks (nonzero), valued value_at(r, c), which is
/// called in row-major order.
CsrMatrix csr_from_mask(std::int64_t rows, std::int64_t cols, const std::vector<char>& mask,
                        const std::function<double(std::int64_t, std::int64_t)>& value_at);

/// A rows x cols matrix whose only stored entry is `value` at (0, 0).
CsrMatrix single_entry_csr(std::int32_t rows, std::int32_t cols, double value);

/// Appends the rows of `below` (columns within a.cols) after a's last row.
void append_rows(CsrMatrix& a, const CsrMatrix& below);

/// A 5 x 4 x 3 node mesh with the given stencil, unknowns per node and node order: small enough for exhaustive
/// checks of every stencil and order.
MeshSpec small_mesh_spec(int stencil, int dofs, NodeOrder order, std::uint64_t seed = 1);
/// An nx x ny x nz node mesh with `dofs` unknowns per node, numbered in random node order (the numbering the
/// default layout must repair).
MeshSpec randomly_numbered_mesh(std::int32_t nx, std::int32_t ny, std::int32_t nz, std::int32_t dofs,
                                std::uint64_t seed = 1);
/// small_mesh_spec for every order (lexicographic, random), stencil (7, 27) and unknowns per node (1, 2, 3).
std::vector<MeshSpec> small_mesh_specs();

/// Catch2 checks that two tile lists hold the same tiles: row pointers, tile columns, values and metadata.
void require_same_tiles(const TileList& a, const TileList& b);

/// Catch2 checks of a generator's output: row pointers from 0 to nnz, sorted unique in-range columns in every
/// row, values in [-1, 1) and never 0.
void require_valid_generated(const CsrMatrix& a);

/// Random float64 matrix rows x cols (row-major, ld = cols), values uniform in [-1, 1).
std::vector<double> random_dense(std::int64_t rows, std::int64_t cols, std::uint64_t seed);

/// Random fp16 matrix rows x cols (row-major, ld = cols), values uniform in [-1, 1) rounded to fp16.
std::vector<std::uint16_t> random_fp16(std::int64_t rows, std::int64_t cols, std::uint64_t seed);

/// How the stored A was rounded, for spmm_error_bound: every entry a of row i was stored with
///   |stored - a| <= unit * |a| + subnormal * 2^row_exponent[i]
/// (unit: the relative rounding of a normal stored value; subnormal: the absolute rounding of a subnormal, in
/// stored units). Derivations in test_support.cpp.
struct StorageRounding {
  double unit = 0.0;
  double subnormal = 0.0;
  std::vector<std::int32_t> row_exponent;  ///< e_i per row of A (stored = a * 2^-e_i); empty: all 0
};
/// The rounding of a converted matrix: its precision's unit and subnormal terms and its rows' exponents
/// (Bcsr24Matrix::exponent_of_row), per-row or matrix-wide alike.
StorageRounding storage_rounding(const Bcsr24Matrix& stored);

/// Element-wise error bound for C = alpha*A*B + beta*C0 computed with the stored A (rounded as `rounding`
/// says) and fp16 B, accumulated in fp32, compared with a float64 reference computed from the *original*
/// double A and the fp16 B. For each output (i, j):
///   |alpha| * ( sum_k (|a_ik| (unit + gamma32(k_i)) + subnormal 2^e_i) |b_kj| ) + |beta| |c0_ij| * 2 u32 + tiny
/// with u32 = 2^-23 and gamma32(k) = k*u32 / (1 - k*u32) the fp32 summation bound over the k_i stored entries
/// of row i. Returns the bound per element.
std::vector<double> spmm_error_bound(const CsrMatrix& a, std::int32_t n, const std::vector<std::uint16_t>& b,
                                     double alpha, double beta, const std::vector<float>& c0,
                                     const StorageRounding& rounding);
/// The same for fp16 storage with one exponent for every row (scale_exponent: A was stored as A * 2^-e, so its
/// subnormal rounding error, 2^-25 absolute, is 2^(e-25)); a_rounded_to_fp16 false: A is used as given.
std::vector<double> spmm_error_bound(const CsrMatrix& a, std::int32_t n, const std::vector<std::uint16_t>& b,
                                     double alpha, double beta, const std::vector<float>& c0,
                                     bool a_rounded_to_fp16 = true, int scale_exponent = 0);

}  // namespace bcsr24::test
