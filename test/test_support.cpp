// Shared test helpers: data locations, seeds, Eigen conversion, error bounds derived from the storage rounding.
#include "test_support.hpp"
#include "test_eigen.hpp"

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <random>

#include <catch2/catch.hpp>

#include "bcsr24/half.hpp"
#include "bcsr24_testkit/synthetic.hpp"

namespace bcsr24::test {

std::optional<std::string> shared_data_dir() {
  const char* env = std::getenv("BCSR24_SHARED_DATA");
  const std::string dir = env ? std::string(env) : std::string(BCSR24_SHARED_DATA_DIR);
  if (std::filesystem::is_directory(dir)) return dir;
  return std::nullopt;
}

std::string project_data_dir() { return BCSR24_TEST_DATA_DIR; }

std::uint64_t test_seed(std::uint64_t fallback) {
  if (const char* env = std::getenv("BCSR24_TEST_SEED")) return std::strtoull(env, nullptr, 10);
  return fallback;
}

Eigen::SparseMatrix<double, Eigen::RowMajor> to_eigen(const CsrMatrix& a) {
  std::vector<Eigen::Triplet<double>> t;
  t.reserve(static_cast<std::size_t>(a.nnz()));
  for (std::int32_t r = 0; r < a.rows; ++r)
    for (std::int32_t p = a.row_ptr[r]; p < a.row_ptr[r + 1]; ++p) t.emplace_back(r, a.col_idx[p], a.values[p]);
  Eigen::SparseMatrix<double, Eigen::RowMajor> m(a.rows, a.cols);
  m.setFromTriplets(t.begin(), t.end());
  return m;
}

std::vector<double> random_dense(std::int64_t rows, std::int64_t cols, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> value(-1.0, 1.0);
  std::vector<double> out(static_cast<std::size_t>(rows * cols));
  for (double& v : out) v = value(rng);
  return out;
}

std::vector<std::uint16_t> random_fp16(std::int64_t rows, std::int64_t cols, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  std::vector<std::uint16_t> out(static_cast<std::size_t>(rows * cols));
  for (auto& v : out) v = double_to_fp16(dist(rng));
  return out;
}

StorageRounding storage_rounding(const Bcsr24Matrix& stored) {
  StorageRounding r;
  // Round to nearest: a normal value with p significant bits is off by at most 2^-p of itself; a subnormal by
  // half the smallest subnormal. fp16: p = 11, 2^-25. bf16: p = 8, 2^-134.
  switch (stored.precision) {
    case Precision::fp16:
      r.unit = std::ldexp(1.0, -11);
      r.subnormal = std::ldexp(1.0, -25);
      break;
    case Precision::bf16:
      r.unit = std::ldexp(1.0, -8);
      r.subnormal = std::ldexp(1.0, -134);
      break;
    case Precision::split:
      // hi = fp16(a): |a - hi| <= 2^-11 |a| + 2^-25. lo = fp16((a - hi) 2^11) is off by at most
      // 2^-11 |a - hi| 2^11 + 2^-25, which weighs 2^-11: |a - hi - 2^-11 lo| <= 2^-11 |a - hi| + 2^-36
      // <= 2^-22 |a| + 2^-36 + 2^-36.
      r.unit = std::ldexp(1.0, -22);
      r.subnormal = std::ldexp(1.0, -35);
      break;
  }
  r.row_exponent.resize(static_cast<std::size_t>(stored.rows));
  for (std::int32_t i = 0; i < stored.rows; ++i) r.row_exponent[static_cast<std::size_t>(i)] = stored.exponent_of_row(i);
  return r;
}

std::vector<double> spmm_error_bound(const CsrMatrix& a, std::int32_t n, const std::vector<std::uint16_t>& b,
                                     double alpha, double beta, const std::vector<float>& c0,
                                     const StorageRounding& rounding) {
  // Unit roundoff of the accumulation. Tensor-core fp32 accumulation is not guaranteed to round to nearest (it
  // may truncate when aligning addends), so each fp32 addition is charged 2^-23 rather than 2^-24.
  const double u32 = std::ldexp(1.0, -23);
  std::vector<double> bound(static_cast<std::size_t>(a.rows) * n, 0.0);
  for (std::int32_t i = 0; i < a.rows; ++i) {
    const std::int32_t k_i = a.row_ptr[i + 1] - a.row_ptr[i];
    // Additions that round: one per nonzero term, plus the cross-warp reduction and the alpha/beta update.
    const double terms = double(k_i) + 8.0;
    const double gamma = terms * u32 / (1.0 - terms * u32);
    const int e = rounding.row_exponent.empty() ? 0 : rounding.row_exponent[static_cast<std::size_t>(i)];
    const double subnormal = std::ldexp(rounding.subnormal, e);  // the absolute term, back in A's units
    for (std::int32_t j = 0; j < n; ++j) {
      double abs_sum = 0.0, abs_sub = 0.0;
      for (std::int32_t p = a.row_ptr[i]; p < a.row_ptr[i + 1]; ++p) {
        const double bv = std::fabs(double(fp16_to_float(b[static_cast<std::size_t>(a.col_idx[p]) * n + j])));
        abs_sum += std::fabs(a.values[p]) * bv;
        abs_sub += bv;
      }
      double err = std::fabs(alpha) * (abs_sum * (rounding.unit + gamma) + abs_sub * subnormal);
      if (beta != 0.0 && !c0.empty()) err += std::fabs(beta) * std::fabs(double(c0[std::size_t(i) * n + j])) * 2 * u32;
      bound[std::size_t(i) * n + j] = err + 1e-30;
    }
  }
  return bound;
}

std::vector<double> spmm_error_bound(const CsrMatrix& a, std::int32_t n, const std::vector<std::uint16_t>& b,
                                     double alpha, double beta, const std::vector<float>& c0,
                                     bool a_rounded_to_fp16, int scale_exponent) {
  StorageRounding rounding;
  if (a_rounded_to_fp16) {
    rounding.unit = std::ldexp(1.0, -11);
    rounding.subnormal = std::ldexp(1.0, -25);
  }
  rounding.row_exponent.assign(static_cast<std::size_t>(a.rows), scale_exponent);
  return spmm_error_bound(a, n, b, alpha, beta, c0, rounding);
}

ConvertOptions convert_policy(TileLayout layout, Reordering reorder) {
  ConvertOptions options;
  options.layout = layout;
  options.reorder = reorder;
  return options;
}

CsrMatrix scattered_csr(std::int32_t rows, std::int32_t cols, int per_row, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> value(-1.0, 1.0);
  Triplets t;
  for (std::int32_t r = 0; r < rows; ++r) {
    if (r % 7 == 3) continue;
    for (int q = 0; q < per_row; ++q) {
      std::int32_t c = static_cast<std::int32_t>(rng() % static_cast<std::uint64_t>(cols));
      if (c % 5 == 2) c = (c + 1) % cols;
      t.add(r, c, value(rng));
    }
  }
  return t.csr(rows, cols);
}

CsrMatrix wide_band_csr() {
  const std::int32_t cols = 70003;
  Triplets t;
  for (std::int32_t c = 0; c < 70000; ++c) t.add(5, c + 3, 1.0 / (1.0 + c % 97));
  for (std::int32_t r = 0; r < 40; ++r) t.add(r, (r * 7919) % cols, 0.5 + r);
  return t.csr(40, cols);
}

CsrMatrix xdys_matrix(std::int32_t rows, std::int32_t cols, double dense_percent, double sparse24_percent,
                      std::uint64_t seed) {
  return generate_xdys(XdYsSpec{rows, cols, dense_percent, sparse24_percent, seed});
}

CsrMatrix power_law_graph(std::int32_t rows, std::int32_t cols, std::int32_t degree, std::uint64_t seed) {
  return generate_random_graph(RandomGraphSpec{rows, cols, degree, /*power_law=*/true, seed});
}

CsrMatrix csr_from_mask(std::int64_t rows, std::int64_t cols, const std::vector<char>& mask,
                        const std::function<double(std::int64_t, std::int64_t)>& value_at) {
  CsrMatrix a;
  a.rows = std::int32_t(rows);
  a.cols = std::int32_t(cols);
  a.row_ptr.assign(std::size_t(rows) + 1, 0);
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t c = 0; c < cols; ++c)
      if (mask[std::size_t(r * cols + c)]) {
        a.col_idx.push_back(std::int32_t(c));
        a.values.push_back(value_at(r, c));
      }
    a.row_ptr[std::size_t(r) + 1] = std::int32_t(a.col_idx.size());
  }
  return a;
}

CsrMatrix single_entry_csr(std::int32_t rows, std::int32_t cols, double value) {
  CsrMatrix a;
  a.rows = rows;
  a.cols = cols;
  a.row_ptr.assign(std::size_t(rows) + 1, 1);
  a.row_ptr[0] = 0;
  a.col_idx = {0};
  a.values = {value};
  return a;
}

void append_rows(CsrMatrix& a, const CsrMatrix& below) {
  for (std::int32_t r = 0; r < below.rows; ++r) {
    for (std::int32_t e = below.row_ptr[std::size_t(r)]; e < below.row_ptr[std::size_t(r) + 1]; ++e) {
      a.col_idx.push_back(below.col_idx[std::size_t(e)]);
      a.values.push_back(below.values[std::size_t(e)]);
    }
    a.row_ptr.push_back(std::int32_t(a.col_idx.size()));
  }
  a.rows += below.rows;
}

MeshSpec small_mesh_spec(int stencil, int dofs, NodeOrder order, std::uint64_t seed) {
  MeshSpec spec{5, 4, 3, dofs, stencil, order};
  spec.seed = seed;
  return spec;
}

MeshSpec randomly_numbered_mesh(std::int32_t nx, std::int32_t ny, std::int32_t nz, std::int32_t dofs,
                                std::uint64_t seed) {
  MeshSpec spec{nx, ny, nz, dofs};
  spec.order = NodeOrder::random;
  spec.seed = seed;
  return spec;
}

std::vector<MeshSpec> small_mesh_specs() {
  std::vector<MeshSpec> out;
  for (NodeOrder order : {NodeOrder::lexicographic, NodeOrder::random})
    for (int stencil : {7, 27})
      for (int dofs : {1, 2, 3}) out.push_back(small_mesh_spec(stencil, dofs, order));
  return out;
}

void require_same_tiles(const TileList& a, const TileList& b) {
  REQUIRE(a.row_ptr == b.row_ptr);
  REQUIRE(a.col_idx == b.col_idx);
  REQUIRE(a.values == b.values);
  REQUIRE(a.metadata == b.metadata);
}

void require_valid_generated(const CsrMatrix& a) {
  REQUIRE(a.row_ptr.size() == std::size_t(a.rows) + 1);
  REQUIRE(a.row_ptr.front() == 0);
  REQUIRE(a.row_ptr.back() == a.nnz());
  REQUIRE(a.values.size() == a.col_idx.size());
  for (std::int32_t r = 0; r < a.rows; ++r)
    for (std::int32_t p = a.row_ptr[std::size_t(r)]; p < a.row_ptr[std::size_t(r) + 1]; ++p) {
      REQUIRE(a.col_idx[std::size_t(p)] >= 0);
      REQUIRE(a.col_idx[std::size_t(p)] < a.cols);
      if (p > a.row_ptr[std::size_t(r)]) REQUIRE(a.col_idx[std::size_t(p)] > a.col_idx[std::size_t(p) - 1]);
      REQUIRE(a.values[std::size_t(p)] >= -1.0);
      REQUIRE(a.values[std::size_t(p)] < 1.0);
      REQUIRE(a.values[std::size_t(p)] != 0.0);
    }
}

}  // namespace bcsr24::test
