// Helpers shared by the tests: data locations, seeds, Eigen references and fp16-derived tolerances.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <Eigen/Sparse>

#include "bcsr24/bcsr24_matrix.hpp"
#include "bcsr24/convert.hpp"
#include "bcsr24/csr_matrix.hpp"

namespace bcsr24::test {

/// ../shared/data (or $BCSR24_SHARED_DATA) if it exists, else nullopt.
std::optional<std::string> shared_data_dir();
/// The project's data/ folder.
std::string project_data_dir();

/// Seed for random tests: $BCSR24_TEST_SEED if set, else `fallback`. Tests print the seed they use.
std::uint64_t test_seed(std::uint64_t fallback);

/// Conversion options with the given tile layout and row reordering (everything else default).
ConvertOptions convert_policy(TileLayout layout, Reordering reorder);

/// Eigen view of a CSR matrix (double).
Eigen::SparseMatrix<double, Eigen::RowMajor> to_eigen(const CsrMatrix& a);

/// Scattered random CSR with empty rows and columns: `per_row` entries per row in random columns (values in
/// [-1, 1)), rows r with r % 7 == 3 left empty, columns c with c % 5 == 2 never used.
CsrMatrix scattered_csr(std::int32_t rows, std::int32_t cols, int per_row, std::uint64_t seed);

/// 40 x 70,003 matrix whose row 5 touches 70,000 columns (the other rows one each): its first 16-row band has
/// more than 2^16 distinct columns.
CsrMatrix wide_band_csr();

/// Random fp16 matrix rows x cols (row-major, ld = cols), values uniform in [-1, 1) rounded to fp16.
std::vector<std::uint16_t> random_fp16(std::int64_t rows, std::int64_t cols, std::uint64_t seed);

/// Element-wise error bound for C = alpha*A*B + beta*C0 computed with fp16 A (already rounded: the
/// stored values) and fp16 B, accumulated in fp32, compared with a float64 reference computed from
/// the *original* double A and the fp16 B. For each output (i, j):
///   |alpha| * ( sum_k |a_ik| |b_kj| ) * (u16 + gamma32(k_i)) + |beta| |c0_ij| * u32 + tiny
/// with u16 = 2^-11 (rounding of A to fp16), u32 = 2^-24 and gamma32(k) = k*u32 / (1 - k*u32)
/// the fp32 summation bound over the k_i stored entries of row i. Returns the bound per element.
/// scale_exponent: A was stored as A * 2^-e, so its subnormal rounding error (2^-25 absolute) is 2^(e-25).
std::vector<double> spmm_error_bound(const CsrMatrix& a, std::int32_t n, const std::vector<std::uint16_t>& b,
                                     double alpha, double beta, const std::vector<float>& c0,
                                     bool a_rounded_to_fp16 = true, int scale_exponent = 0);

}  // namespace bcsr24::test
