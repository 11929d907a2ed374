// CPU reference SpMM on the host format against Eigen's double product of the original CSR matrix.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <random>
#include <vector>

#include <Eigen/Dense>
#include <Eigen/Sparse>

#include "format/convert.hpp"
#include "bcsr24/error.hpp"
#include "bcsr24/half.hpp"
#include "format/reference.hpp"
#include "bcsr24_testkit/synthetic.hpp"
#include "test_eigen.hpp"
#include "test_support.hpp"

using namespace bcsr24;

namespace {

using RowMajorMatrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

/// Every occupancy of a 4-column group that a 2:4 tile allows.
constexpr unsigned kAtMostTwo[11] = {0x0, 0x1, 0x2, 0x4, 0x8, 0x3, 0x5, 0x6, 0x9, 0xA, 0xC};

/// Random CSR mixing zero, 2:4, fully dense and randomly filled tiles; `value` draws each nonzero.
CsrMatrix random_tiled_csr(std::int32_t rows, std::int32_t cols, std::mt19937_64& rng,
                           const std::function<double()>& value) {
  std::vector<char> occupied(std::size_t(rows) * std::size_t(cols), 0);
  const std::int32_t tile_rows = (rows + 15) / 16, tile_cols = (cols + 31) / 32;
  for (std::int32_t tr = 0; tr < tile_rows; ++tr)
    for (std::int32_t tc = 0; tc < tile_cols; ++tc) {
      const int style = int(rng() % 4);
      for (int r = 0; r < 16; ++r)
        for (int grp = 0; grp < 8; ++grp) {
          unsigned keep = 0;
          if (style == 1) keep = kAtMostTwo[rng() % 11];
          if (style == 2) keep = 0xF;
          if (style == 3) keep = unsigned(rng() & 0xF) & unsigned(rng() & 0xF);
          for (int q = 0; q < 4; ++q) {
            const std::int64_t row = std::int64_t(tr) * 16 + r, col = std::int64_t(tc) * 32 + 4 * grp + q;
            if ((keep & (1u << q)) && row < rows && col < cols) occupied[std::size_t(row * cols + col)] = 1;
          }
        }
    }
  return bcsr24::test::csr_from_mask(rows, cols, occupied, [&](std::int64_t, std::int64_t) { return value(); });
}

/// alpha * A * B + beta * C0 in double from the ORIGINAL matrix (Eigen), B given as fp16 with ld = n.
RowMajorMatrix eigen_product(const CsrMatrix& a, std::int32_t n, const std::vector<fp16_t>& b, double alpha,
                             double beta, const std::vector<float>& c0) {
  RowMajorMatrix bd(a.cols, n), c(a.rows, n);
  for (std::int64_t k = 0; k < a.cols; ++k)
    for (std::int32_t j = 0; j < n; ++j) bd(k, j) = double(fp16_to_float(b[std::size_t(k * n + j)]));
  for (std::int64_t i = 0; i < a.rows; ++i)
    for (std::int32_t j = 0; j < n; ++j) c(i, j) = beta == 0.0 ? 0.0 : beta * double(c0[std::size_t(i * n + j)]);
  const RowMajorMatrix product = bcsr24::test::to_eigen(a) * bd;
  return alpha * product + c;
}

/// Checks C against the Eigen product element by element within `bound`; also that C is not all zero.
void require_within(const std::vector<float>& c, std::int64_t ldc, const RowMajorMatrix& want,
                    const std::vector<double>& bound) {
  double norm = 0.0;
  for (std::int64_t i = 0; i < want.rows(); ++i)
    for (std::int64_t j = 0; j < want.cols(); ++j) {
      const double got = double(c[std::size_t(i * ldc + j)]);
      CAPTURE(i, j, got, want(i, j), bound[std::size_t(i * want.cols() + j)]);
      REQUIRE(std::isfinite(got));
      REQUIRE(std::fabs(got - want(i, j)) <= bound[std::size_t(i * want.cols() + j)]);
      norm += got * got;
    }
  if (want.norm() > 0) REQUIRE(norm > 0.0);  // an all-zero C cannot pass
}

std::vector<float> random_c(std::int64_t rows, std::int64_t ld, std::mt19937_64& rng) {
  std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
  std::vector<float> c(std::size_t(rows * ld));
  for (float& x : c) x = dist(rng);
  return c;
}

}  // namespace

TEST_CASE("reference_spmm matches Eigen on random matrices of awkward sizes", "[reference]") {
  const std::uint64_t seed = bcsr24::test::test_seed(2024);
  INFO("seed " << seed);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  const std::vector<std::pair<int, int>> sizes = {{37, 45}, {100, 77}, {1, 1}, {16, 32}, {17, 33}, {130, 300}};
  for (const auto& [rows, cols] : sizes)
    for (std::int32_t n : {1, 3, 8, 17}) {
      CAPTURE(rows, cols, n);
      const CsrMatrix a = random_tiled_csr(rows, cols, rng, [&] { return dist(rng); });
      const Bcsr24Matrix b24 = convert_to_bcsr24(a);
      const std::vector<fp16_t> b = bcsr24::test::random_fp16(cols, n, rng());

      // alpha, beta != (1, 0), C read.
      {
        const double alpha = -1.5, beta = 0.75;
        const std::vector<float> c0 = random_c(rows, n, rng);
        std::vector<float> c = c0;
        reference_spmm(b24, n, b.data(), n, c.data(), n, alpha, beta);
        require_within(c, n, eigen_product(a, n, b, alpha, beta, c0),
                       bcsr24::test::spmm_error_bound(a, n, b, alpha, beta, c0, bcsr24::test::storage_rounding(b24)));
      }
      // beta == 0 on a NaN-poisoned C: every element is overwritten, no NaN survives.
      {
        const double alpha = 2.0;
        std::vector<float> c(std::size_t(rows) * std::size_t(n), std::numeric_limits<float>::quiet_NaN());
        reference_spmm(b24, n, b.data(), n, c.data(), n, alpha, 0.0);
        require_within(c, n, eigen_product(a, n, b, alpha, 0.0, {}),
                       bcsr24::test::spmm_error_bound(a, n, b, alpha, 0.0, {}, bcsr24::test::storage_rounding(b24)));
      }
    }
}

TEST_CASE("reference_spmm honours leading dimensions and leaves the gaps alone", "[reference]") {
  const std::uint64_t seed = bcsr24::test::test_seed(77);
  INFO("seed " << seed);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  const std::int32_t rows = 45, cols = 70, n = 5, ldb = 9, ldc = 11;
  const CsrMatrix a = random_tiled_csr(rows, cols, rng, [&] { return dist(rng); });
  const std::vector<fp16_t> b = bcsr24::test::random_fp16(cols, n, rng());
  std::vector<fp16_t> b_strided(std::size_t(cols) * ldb, double_to_fp16(1000.0));  // gaps would show up loudly
  for (std::int64_t k = 0; k < cols; ++k)
    for (std::int32_t j = 0; j < n; ++j) b_strided[std::size_t(k * ldb + j)] = b[std::size_t(k * n + j)];
  std::vector<float> c(std::size_t(rows) * ldc, -7.0f);
  const std::vector<float> c_compact(std::size_t(rows) * n, -7.0f);
  const Bcsr24Matrix b24 = convert_to_bcsr24(a);
  reference_spmm(b24, n, b_strided.data(), ldb, c.data(), ldc, 0.5, -1.0);
  require_within(c, ldc, eigen_product(a, n, b, 0.5, -1.0, c_compact),
                 bcsr24::test::spmm_error_bound(a, n, b, 0.5, -1.0, c_compact, bcsr24::test::storage_rounding(b24)));
  for (std::int64_t i = 0; i < rows; ++i)
    for (std::int64_t j = n; j < ldc; ++j) REQUIRE(c[std::size_t(i * ldc + j)] == -7.0f);
}

TEST_CASE("reference_spmm is exact on small-integer matrices", "[reference]") {
  // Integers |a| <= 5, |b| <= 4 and short rows keep every partial sum an exact small integer (in fp16, float
  // and double), so the result must equal Eigen's bit for bit.
  const std::uint64_t seed = bcsr24::test::test_seed(4242);
  INFO("seed " << seed);
  std::mt19937_64 rng(seed);
  const auto small_nonzero = [&] {
    int v;
    do v = int(rng() % 11) - 5; while (v == 0);
    return double(v);
  };
  for (const auto& [rows, cols] : std::vector<std::pair<int, int>>{{37, 45}, {100, 77}, {1, 1}, {17, 33}, {64, 96}}) {
    for (std::int32_t n : {1, 4, 9}) {
      CAPTURE(rows, cols, n);
      const CsrMatrix a = random_tiled_csr(rows, cols, rng, small_nonzero);
      std::vector<fp16_t> b(std::size_t(cols) * n);
      for (fp16_t& x : b) x = double_to_fp16(double(int(rng() % 9) - 4));
      std::vector<float> c0(std::size_t(rows) * n);
      for (float& x : c0) x = float(int(rng() % 17) - 8);
      const double alpha = 2.0, beta = -3.0;
      std::vector<float> c = c0;
      reference_spmm(convert_to_bcsr24(a), n, b.data(), n, c.data(), n, alpha, beta);
      const RowMajorMatrix want = eigen_product(a, n, b, alpha, beta, c0);
      double norm = 0.0;
      for (std::int64_t i = 0; i < rows; ++i)
        for (std::int32_t j = 0; j < n; ++j) {
          CAPTURE(i, j);
          REQUIRE(double(c[std::size_t(i * n + j)]) == want(i, j));
          norm += std::fabs(want(i, j));
        }
      if (a.nnz() > 8) REQUIRE(norm > 0.0);
    }
  }
}

TEST_CASE("reference_spmm undoes the matrix-wide fp16 scaling of large and tiny matrices", "[reference][scaling]") {
  const std::uint64_t seed = bcsr24::test::test_seed(555);
  INFO("seed " << seed);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  for (double magnitude : {1e6, 1e-9}) {
    CAPTURE(magnitude);
    const std::int32_t rows = 50, cols = 70, n = 6;
    const CsrMatrix a = random_tiled_csr(rows, cols, rng, [&] { return magnitude * dist(rng); });
    ConvertOptions matrix_wide;
    matrix_wide.scaling = ScalingPolicy::automatic;
    const Bcsr24Matrix b24 = convert_to_bcsr24(a, matrix_wide);
    REQUIRE(b24.row_exponent.empty());
    if (magnitude > 1) CHECK(b24.scaling.exponent > 0);
    else CHECK(b24.scaling.exponent < 0);
    const std::vector<fp16_t> b = bcsr24::test::random_fp16(cols, n, rng());
    std::vector<float> c(std::size_t(rows) * n, std::numeric_limits<float>::quiet_NaN());
    const double alpha = -0.75;
    reference_spmm(b24, n, b.data(), n, c.data(), n, alpha, 0.0);
    // The fp16 rounding happens on A * 2^-e, so the bound is that of the scaled matrix, scaled back by 2^e
    // (this scales the absolute subnormal term correctly; the relative terms are unchanged).
    CsrMatrix scaled = a;
    for (double& v : scaled.values) v = std::ldexp(v, -b24.scaling.exponent);
    std::vector<double> bound = bcsr24::test::spmm_error_bound(scaled, n, b, alpha, 0.0, {});
    for (double& x : bound) x = std::ldexp(x, b24.scaling.exponent);
    require_within(c, n, eigen_product(a, n, b, alpha, 0.0, {}), bound);
  }
}

TEST_CASE("reference_spmm on an XdYs matrix matches Eigen", "[reference]") {
  const std::uint64_t seed = bcsr24::test::test_seed(8);
  INFO("seed " << seed);
  XdYsSpec spec;
  spec.rows = 200;
  spec.cols = 333;
  spec.dense_percent = 20;
  spec.sparse24_percent = 30;
  spec.seed = seed;
  const CsrMatrix a = generate_xdys(spec);
  const std::int32_t n = 8;
  const std::vector<fp16_t> b = bcsr24::test::random_fp16(spec.cols, n, seed + 1);
  std::vector<float> c(std::size_t(spec.rows) * n, std::numeric_limits<float>::quiet_NaN());
  const Bcsr24Matrix b24 = convert_to_bcsr24(a);
  reference_spmm(b24, n, b.data(), n, c.data(), n, 1.0, 0.0);
  require_within(c, n, eigen_product(a, n, b, 1.0, 0.0, {}),
                 bcsr24::test::spmm_error_bound(a, n, b, 1.0, 0.0, {}, bcsr24::test::storage_rounding(b24)));
}

TEST_CASE("reference_spmm reads the tile lists, metadata included, not the source", "[reference]") {
  // One 2:4 tile with a single 1 at (0, 0). Rewriting its metadata to name position 2 first moves the value
  // to column 2: the product must follow the stored format.
  const CsrMatrix a = bcsr24::test::single_entry_csr(16, 32, 1.0);
  Bcsr24Matrix b24 = convert_to_bcsr24(a);
  REQUIRE(b24.sparse24.tiles() == 1);
  std::vector<fp16_t> b(32, 0);
  b[0] = double_to_fp16(3.0);
  b[2] = double_to_fp16(5.0);
  std::vector<float> c(16, 0.0f);
  reference_spmm(b24, 1, b.data(), 1, c.data(), 1, 1.0, 0.0);
  CHECK(c[0] == 3.0f);
  std::uint32_t& word = b24.sparse24.metadata[std::size_t(metadata_word(0, 0))];
  REQUIRE(((word >> metadata_shift(0, 0)) & 0xFu) == 0x4u);  // (0, 1)
  word = (word & ~(0xFu << metadata_shift(0, 0))) | (0xEu << metadata_shift(0, 0));  // (2, 3)
  reference_spmm(b24, 1, b.data(), 1, c.data(), 1, 1.0, 0.0);
  CHECK(c[0] == 5.0f);
  // The same through the scale exponents: the row's stored value (1 * 2^-e0, e0 its own exponent) now means
  // 2^3 more.
  b24.scaling.exponent = 3;
  reference_spmm(b24, 1, b.data(), 1, c.data(), 1, 1.0, 0.0);
  CHECK(c[0] == 40.0f);
  for (int r = 1; r < 16; ++r) CHECK(c[std::size_t(r)] == 0.0f);
}

TEST_CASE("reference_spmm rejects bad arguments", "[reference]") {
  CsrMatrix a;
  a.rows = 3;
  a.cols = 3;
  a.row_ptr = {0, 1, 1, 1};
  a.col_idx = {1};
  a.values = {1.0};
  const Bcsr24Matrix b24 = convert_to_bcsr24(a);
  std::vector<fp16_t> b(9, 0);
  std::vector<float> c(9, 0.0f);
  CHECK_THROWS_AS(reference_spmm(b24, 0, b.data(), 3, c.data(), 3, 1.0, 0.0), InvalidArgument);
  CHECK_THROWS_AS(reference_spmm(b24, 3, b.data(), 2, c.data(), 3, 1.0, 0.0), InvalidArgument);
  CHECK_THROWS_AS(reference_spmm(b24, 3, b.data(), 3, c.data(), 2, 1.0, 0.0), InvalidArgument);
  CHECK_THROWS_AS(reference_spmm(b24, 3, static_cast<const fp16_t*>(nullptr), 3, c.data(), 3, 1.0, 0.0), InvalidArgument);
  CHECK_THROWS_AS(reference_spmm(b24, 3, static_cast<const float*>(nullptr), 3, c.data(), 3, 1.0, 0.0), InvalidArgument);
  const std::vector<float> b32(9, 0.0f);
  CHECK_THROWS_AS(reference_spmm(b24, 3, b32.data(), 2, c.data(), 3, 1.0, 0.0), InvalidArgument);
}
