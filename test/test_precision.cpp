// Storage precisions and per-row scaling (precision.hpp, ScalingPolicy::per_row): what each row keeps, the census
// of what storing did, split values' error, and the CPU references against exact double products with bounds
// derived from the storage rounding.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "format/convert.hpp"
#include "bcsr24/error.hpp"
#include "bcsr24/half.hpp"
#include "bcsr24/precision.hpp"
#include "bcsr24/spmm_plan.hpp"
#include "format/reference.hpp"
#include "test_support.hpp"

using namespace bcsr24;

namespace {

constexpr Precision kPrecisions[] = {Precision::fp16, Precision::bf16, Precision::split};

/// CSR from rows of (column, value) pairs, columns ascending.
CsrMatrix csr_from_rows(std::int32_t cols, const std::vector<std::vector<std::pair<std::int32_t, double>>>& rows) {
  CsrMatrix a;
  a.rows = static_cast<std::int32_t>(rows.size());
  a.cols = cols;
  a.row_ptr.assign(1, 0);
  for (const auto& row : rows) {
    for (const auto& [c, v] : row) {
      a.col_idx.push_back(c);
      a.values.push_back(v);
    }
    a.row_ptr.push_back(static_cast<std::int32_t>(a.col_idx.size()));
  }
  return a;
}

double row_max(const CsrMatrix& a, std::int32_t r) {
  double m = 0.0;
  for (std::int32_t p = a.row_ptr[std::size_t(r)]; p < a.row_ptr[std::size_t(r) + 1]; ++p)
    m = std::max(m, std::fabs(a.values[std::size_t(p)]));
  return m;
}

/// The stored value of a (scaled by 2^-e) decoded and scaled back, computed here from the public conversions
/// and the definition of each precision (independently of the library's encoder).
double expected_stored(Precision precision, double a, int e) {
  const double scaled = std::ldexp(a, -e);
  double decoded = 0.0;
  switch (precision) {
    case Precision::fp16: decoded = double(fp16_to_float(double_to_fp16(scaled))); break;
    case Precision::bf16: decoded = double(bf16_to_float(double_to_bf16(scaled))); break;
    case Precision::split: {
      const double hi = double(fp16_to_float(double_to_fp16(scaled)));
      const double lo = double(fp16_to_float(double_to_fp16((scaled - hi) * 2048.0)));
      decoded = hi + lo / 2048.0;
      break;
    }
  }
  return std::ldexp(decoded, e);
}

ConvertOptions options_for(Precision precision, ScalingPolicy scaling, TileLayout layout = TileLayout::aligned,
                           Reordering reorder = Reordering::none) {
  ConvertOptions options;
  options.precision = precision;
  options.scaling = scaling;
  options.layout = layout;
  options.reorder = reorder;
  return options;
}

/// Rows whose scales run from 1e-8 to 1e8, a row holding 1e-8 .. 1e8 itself, a row spanning 2^50 whose flushed
/// entries are known by hand, rows at the ends of the double range, and empty rows.
CsrMatrix wide_range_matrix(std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> unit(0.5, 1.0);
  const std::int32_t cols = 70;
  std::vector<std::vector<std::pair<std::int32_t, double>>> rows;
  for (int r = 0; r < 33; ++r) {  // scale 10^(-8 + r / 2)
    const double scale = std::pow(10.0, -8.0 + 0.5 * r);
    std::vector<std::pair<std::int32_t, double>> row;
    for (std::int32_t c = r % 3; c < cols; c += 1 + int(rng() % 4))
      row.emplace_back(c, (rng() & 1 ? -1.0 : 1.0) * scale * unit(rng) * std::pow(10.0, -double(rng() % 5)));
    rows.push_back(row);
  }
  std::vector<std::pair<std::int32_t, double>> inside;  // 1e-8 .. 1e8 in one row
  for (int k = -8; k <= 8; ++k) inside.emplace_back(3 * (k + 8), (k % 2 ? -1.0 : 1.0) * std::pow(10.0, k));
  rows.push_back(inside);
  // Largest 1.0, so stored values are a * 2^14 and fp16 flushes at or below 2^-25: 2^-38 and 1.5 * 2^-39 survive
  // (one subnormal unit each), 2^-39 is exactly half a unit and ties to zero, 2^-41 and 2^-50 are below.
  rows.push_back({{0, 1.0}, {5, std::ldexp(1.0, -38)}, {9, -std::ldexp(1.5, -39)}, {10, std::ldexp(1.0, -39)},
                  {20, -std::ldexp(1.0, -41)}, {69, std::ldexp(1.0, -50)}});
  rows.push_back({});
  rows.push_back({{1, 1e300}, {2, -3e299}});
  rows.push_back({{7, -1e-300}, {8, 2e-301}});
  rows.push_back({{4, 5e-320}});  // a subnormal double: the exponent is still exact
  rows.push_back({{0, 0.0}});     // an explicit zero only
  return csr_from_rows(cols, rows);
}

/// Checks `b` against its source entry by entry: per-row exponents, every stored value, the census (flushed
/// count, largest flushed share of a row, largest relative error, Frobenius error).
void require_faithful(const CsrMatrix& a, const Bcsr24Matrix& b, Precision precision) {
  REQUIRE(b.precision == precision);
  REQUIRE(b.scaling.per_row);
  REQUIRE(b.scaling.exponent == 0);
  REQUIRE(b.row_exponent.size() == std::size_t(a.rows));
  const std::vector<double> dense = decode_to_dense(b);
  // Frobenius moments relative to the largest row's power of two, so that 1e300 and 1e-320 rows cannot overflow
  // or vanish before the rows are compared.
  int top = std::numeric_limits<int>::min();
  for (std::int32_t r = 0; r < a.rows; ++r)
    if (row_max(a, r) > 0.0) top = std::max(top, std::ilogb(row_max(a, r)));
  std::int64_t flushed = 0;
  double max_flushed_relative = 0.0, max_relative_error = 0.0, error_sq = 0.0, source_sq = 0.0;
  int min_e = std::numeric_limits<int>::max(), max_e = std::numeric_limits<int>::min();
  for (std::int32_t r = 0; r < a.rows; ++r) {
    const double m = row_max(a, r);
    const int e = m > 0.0 ? std::ilogb(m) - 14 : 0;
    CAPTURE(r, m);
    REQUIRE(b.row_exponent[std::size_t(r)] == e);
    if (m > 0.0) {
      min_e = std::min(min_e, e);
      max_e = std::max(max_e, e);
    }
    for (std::int32_t p = a.row_ptr[std::size_t(r)]; p < a.row_ptr[std::size_t(r) + 1]; ++p) {
      const double v = a.values[std::size_t(p)];
      if (v == 0.0) continue;
      const double got = dense[std::size_t(r) * std::size_t(a.cols) + std::size_t(a.col_idx[std::size_t(p)])];
      CAPTURE(v, got);
      REQUIRE(got == expected_stored(precision, v, e));
      // Every entry above 2^-24 of its row's largest survives, within the precision's relative rounding: it is
      // stored at 2^14 * 2^-24 = 2^-10 or more, in the normal range of fp16 (and of bf16).
      if (std::fabs(v) > std::ldexp(m, -24)) {
        REQUIRE(got != 0.0);
        REQUIRE(std::fabs(got - v) <= test::storage_rounding(b).unit * std::fabs(v));
      }
      const int n = std::ilogb(m);
      error_sq += std::pow(std::ldexp(got - v, -n), 2) * std::ldexp(1.0, 2 * (n - top));
      source_sq += std::pow(std::ldexp(v, -n), 2) * std::ldexp(1.0, 2 * (n - top));
      if (got == 0.0) {
        ++flushed;
        max_flushed_relative = std::max(max_flushed_relative, std::fabs(v) / m);
      } else {
        max_relative_error = std::max(max_relative_error, std::fabs(got - v) / std::fabs(v));
      }
    }
  }
  CHECK(b.scaling.min_row_exponent == min_e);
  CHECK(b.scaling.max_row_exponent == max_e);
  CHECK(b.scaling.flushed_count == flushed);
  CHECK(b.scaling.max_flushed_relative == max_flushed_relative);
  CHECK(b.scaling.max_relative_error == max_relative_error);
  CHECK(b.scaling.frobenius_relative_error == Approx(std::sqrt(error_sq / source_sq)).epsilon(1e-12));
}

}  // namespace

TEST_CASE("precision names round-trip and unknown names are refused", "[precision]") {
  for (const Precision p : kPrecisions) CHECK(precision_from_name(precision_name(p)) == p);
  CHECK(std::string(precision_name(Precision::split)) == "split");
  try {
    precision_from_name("fp32");
    FAIL("accepted fp32");
  } catch (const InvalidArgument& e) {
    const std::string what = e.what();
    CHECK(what.find("fp32") != std::string::npos);
    CHECK(what.find("fp16, bf16 or split") != std::string::npos);
  }
}

TEST_CASE("element type names round-trip and unknown names are refused", "[precision]") {
  for (const ElementType t : {ElementType::automatic, ElementType::f16, ElementType::bf16, ElementType::f32})
    CHECK(element_type_from_name(element_type_name(t)) == t);
  CHECK(std::string(element_type_name(ElementType::automatic)) == "auto");
  BCSR24_CHECK_INVALID(element_type_from_name("fp64"), "unknown element type 'fp64' (expected auto, fp16, bf16 or fp32)");
}

TEST_CASE("per-row scaling keeps every row, whatever its scale, in every precision and layout", "[precision][scaling]") {
  const std::uint64_t seed = test::test_seed(61);
  INFO("seed " << seed);
  const CsrMatrix a = wide_range_matrix(seed);
  CHECK(ConvertOptions{}.scaling == ScalingPolicy::per_row);
  for (const Precision precision : kPrecisions)
    for (const auto& [layout, reorder] : {std::pair{TileLayout::aligned, Reordering::none},
                                          std::pair{TileLayout::aligned, Reordering::rcm},
                                          std::pair{TileLayout::condensed, Reordering::rcm}}) {
      CAPTURE(precision_name(precision), layout_name(layout), reordering_name(reorder));
      const Bcsr24Matrix b = convert_to_bcsr24(a, options_for(precision, ScalingPolicy::per_row, layout, reorder));
      require_faithful(a, b, precision);
      if (precision != Precision::bf16) CHECK(b.scaling.flushed_count > 0);
    }
  // One exponent for the whole matrix loses the small rows: far more flushes than with per-row scaling.
  const Bcsr24Matrix wide = convert_to_bcsr24(a, options_for(Precision::fp16, ScalingPolicy::automatic));
  const Bcsr24Matrix per_row = convert_to_bcsr24(a, options_for(Precision::fp16, ScalingPolicy::per_row));
  CHECK(wide.row_exponent.empty());
  CHECK(wide.scaling.flushed_count > 10 * per_row.scaling.flushed_count);
}

TEST_CASE("census of a row spanning more than 2^40, counted by hand", "[precision][scaling]") {
  const CsrMatrix a = csr_from_rows(70, {{{0, 1.0}, {5, std::ldexp(1.0, -38)}, {9, -std::ldexp(1.5, -39)},
                                          {10, std::ldexp(1.0, -39)}, {20, -std::ldexp(1.0, -41)},
                                          {69, std::ldexp(1.0, -50)}},
                                         {{3, 1e8}, {4, -1e-8}}});
  const Bcsr24Matrix fp16 = convert_to_bcsr24(a, options_for(Precision::fp16, ScalingPolicy::per_row));
  // Row 0: 2^-39, 2^-41, 2^-50. Row 1: 1e-8 is 1e-16 (about 2^-53) of its row's largest.
  CHECK(fp16.scaling.flushed_count == 4);
  CHECK(fp16.scaling.max_flushed_relative == std::ldexp(1.0, -39));
  CHECK(fp16.scaling.subnormal_count == 2);  // 2^-38 and 1.5 * 2^-39, stored as 2^-24 and 2^-24 (rounded)
  CHECK(fp16.row_exponent == std::vector<std::int16_t>{-14, std::int16_t(std::ilogb(1e8) - 14)});
  const Bcsr24Matrix split = convert_to_bcsr24(a, options_for(Precision::split, ScalingPolicy::per_row));
  // Split keeps a * 2^14 down to 2^-36 (a low part of 2^-25 is a tie to 0): only 2^-50 and 1e-8 flush.
  CHECK(split.scaling.flushed_count == 2);
  CHECK(split.scaling.max_flushed_relative == std::ldexp(1.0, -50));
  const Bcsr24Matrix bf16 = convert_to_bcsr24(a, options_for(Precision::bf16, ScalingPolicy::per_row));
  CHECK(bf16.scaling.flushed_count == 0);
  CHECK(bf16.scaling.max_flushed_relative == 0.0);
  CHECK(bf16.scaling.max_relative_error <= std::ldexp(1.0, -8));
  CHECK(bf16.scaling.max_relative_error > std::ldexp(1.0, -12));  // 1e8 and 1e-8 are not bf16 values
}

TEST_CASE("the census is the same for every layout and thread count", "[precision][scaling]") {
  const std::uint64_t seed = test::test_seed(62);
  INFO("seed " << seed);
  CsrMatrix a = test::scattered_csr(2500, 2600, 70, seed);  // over 2 x 65536 entries: several chunks
  std::mt19937_64 rng(seed);
  for (double& v : a.values) v *= std::pow(10.0, double(int(rng() % 13)) - 6.0);
  for (const Precision precision : kPrecisions) {
    CAPTURE(precision_name(precision));
    std::vector<Bcsr24Matrix> runs;
    for (const int threads : {1, 3}) {
      for (const auto& [layout, reorder] : {std::pair{TileLayout::aligned, Reordering::none},
                                            std::pair{TileLayout::condensed, Reordering::rcm}}) {
        ConvertOptions options = options_for(precision, ScalingPolicy::per_row, layout, reorder);
        options.threads = threads;
        runs.push_back(convert_to_bcsr24(a, options));
      }
    }
    // fp16 and split flush or store subnormals in rows spanning 10^12; bf16 holds them all.
    if (precision != Precision::bf16) REQUIRE(runs[0].scaling.flushed_count + runs[0].scaling.subnormal_count > 0);
    REQUIRE(runs[0].scaling.frobenius_relative_error > 0.0);
    for (const Bcsr24Matrix& r : runs) {
      CHECK(r.row_exponent == runs[0].row_exponent);
      CHECK(r.scaling.flushed_count == runs[0].scaling.flushed_count);
      CHECK(r.scaling.subnormal_count == runs[0].scaling.subnormal_count);
      CHECK(std::memcmp(&r.scaling.max_flushed_relative, &runs[0].scaling.max_flushed_relative, 8) == 0);
      CHECK(std::memcmp(&r.scaling.max_relative_error, &runs[0].scaling.max_relative_error, 8) == 0);
      CHECK(std::memcmp(&r.scaling.frobenius_relative_error, &runs[0].scaling.frobenius_relative_error, 8) == 0);
    }
  }
}

TEST_CASE("split values carry 22 significant bits", "[precision][split]") {
  // hi = fp16(a) is normal (|a| >= 2^-14) with exponent E: |a - hi| <= 2^(E-11), so lo's exact value is at most
  // 2^E and fp16 rounds it within max(2^-11 2^E, 2^-25); that error weighs 2^-11: |a - hi - 2^-11 lo| <=
  // max(2^(E-22), 2^-36) = 2^(E-22) for E >= -14, while |a| >= 2^E (1 - 2^-11). Hence a relative error of at most
  // 2^-22 / (1 - 2^-11) wherever hi is normal; everywhere, |error| <= 2^-22 |a| + 2^-35 in stored units.
  const std::uint64_t seed = test::test_seed(63);
  INFO("seed " << seed);
  std::mt19937_64 rng(seed);
  CsrMatrix a = test::scattered_csr(300, 400, 40, seed);
  std::uniform_real_distribution<double> decades(-6.0, 6.0);
  for (double& v : a.values) v *= std::pow(10.0, decades(rng));
  for (const ScalingPolicy scaling : {ScalingPolicy::per_row, ScalingPolicy::automatic}) {
    CAPTURE(int(scaling));
    const Bcsr24Matrix b = convert_to_bcsr24(a, options_for(Precision::split, scaling));
    REQUIRE(b.sparse24.values_lo.size() == b.sparse24.values.size());
    REQUIRE(b.dense.values_lo.size() == b.dense.values.size());
    const std::vector<double> dense = decode_to_dense(b);
    const double tight = std::ldexp(1.0, -22) / (1.0 - std::ldexp(1.0, -11));
    double largest = 0.0;
    std::int64_t with_hi_normal = 0;
    for (std::int32_t r = 0; r < a.rows; ++r) {
      const int e = b.exponent_of_row(r);
      for (std::int32_t p = a.row_ptr[std::size_t(r)]; p < a.row_ptr[std::size_t(r) + 1]; ++p) {
        const double v = a.values[std::size_t(p)];
        const double got = dense[std::size_t(r) * std::size_t(a.cols) + std::size_t(a.col_idx[std::size_t(p)])];
        const double error = std::fabs(got - v);
        CAPTURE(r, v, got, e);
        REQUIRE(error <= std::ldexp(1.0, -22) * std::fabs(v) + std::ldexp(1.0, e - 35));
        if (std::fabs(std::ldexp(v, -e)) >= std::ldexp(1.0, -14)) {
          ++with_hi_normal;
          REQUIRE(error <= tight * std::fabs(v));
          largest = std::max(largest, error / std::fabs(v));
        }
      }
    }
    REQUIRE(with_hi_normal > a.nnz() / 2);
    // The bound is nearly reached (so the low parts are really there and really 11 bits).
    CHECK(largest > std::ldexp(1.0, -24));
  }
}

TEST_CASE("bf16 automatic scaling and ScalingPolicy::none use bf16's range", "[precision][scaling]") {
  // 1e6 overflows fp16 but not bf16; 1e39 overflows bf16.
  const CsrMatrix mid = csr_from_rows(2, {{{0, 1e6}, {1, 3.0}}});
  CHECK_THROWS_AS(convert_to_bcsr24(mid, options_for(Precision::fp16, ScalingPolicy::none)), RangeError);
  const Bcsr24Matrix kept = convert_to_bcsr24(mid, options_for(Precision::bf16, ScalingPolicy::none));
  CHECK(kept.scaling.exponent == 0);
  CHECK(kept.scaling.overflow_count == 0);
  CHECK(decode_to_dense(kept)[1] == 3.0);
  const Bcsr24Matrix mid_auto = convert_to_bcsr24(mid, options_for(Precision::bf16, ScalingPolicy::automatic));
  CHECK(mid_auto.scaling.exponent == 0);

  const CsrMatrix huge = csr_from_rows(2, {{{0, 1e39}, {1, -2.0}}});
  try {
    convert_to_bcsr24(huge, options_for(Precision::bf16, ScalingPolicy::none));
    FAIL("1e39 accepted without scaling");
  } catch (const RangeError& e) {
    CHECK(std::string(e.what()).find("bf16") != std::string::npos);
  }
  const Bcsr24Matrix down = convert_to_bcsr24(huge, options_for(Precision::bf16, ScalingPolicy::automatic));
  CHECK(down.scaling.overflow_count == 1);
  CHECK(std::ldexp(1e39, -down.scaling.exponent) <= kBf16Max);  // the smallest exponent that fits
  CHECK(std::ldexp(1e39, -(down.scaling.exponent - 1)) > kBf16Max);

  // Below bf16's normal range (2^-126): scaled up until the largest reaches 2^127 at most.
  const CsrMatrix tiny = csr_from_rows(2, {{{0, 1e-39}, {1, 1e-30}}});
  const Bcsr24Matrix up = convert_to_bcsr24(tiny, options_for(Precision::bf16, ScalingPolicy::automatic));
  CHECK(up.scaling.exponent < 0);
  CHECK(up.scaling.underflow_count == 0);
  CHECK(std::ldexp(1e-30, -up.scaling.exponent) <= std::ldexp(1.0, 127));
  CHECK(std::ldexp(1e-30, -(up.scaling.exponent - 1)) > std::ldexp(1.0, 127));
  CHECK(up.scaling.subnormal_count == 0);
  const Bcsr24Matrix unscaled = convert_to_bcsr24(tiny, options_for(Precision::bf16, ScalingPolicy::none));
  CHECK(unscaled.scaling.subnormal_count == 1);  // 1e-39 is a bf16 subnormal
  CHECK(unscaled.scaling.flushed_count == 0);
}

// ---- the CPU references against an exact double product ------------------------------------------------

namespace {

/// Runs reference_spmm with 16-bit (fp16, or bf16 for a bf16 matrix) or fp32 B and checks every element of C against alpha * A * B + beta * C0
/// computed in double from the source A. The bound, per element, from what can differ:
///   storage  |alpha| sum_k (unit |a_ik| + subnormal 2^e_i) |b_kj|      (test::storage_rounding)
///   double   (k_i + 4) 2^-52 (|alpha| sum_k |a_ik| |b_kj| (1 + unit) + |beta c0_ij|)   both sides' sums
///   output   2^-24 (|exact| + storage + double)                           the final rounding to float
template <class BValue>
void require_reference_exact_within_rounding(const CsrMatrix& a, const Bcsr24Matrix& b24, std::int32_t n,
                                             const std::vector<BValue>& b, double alpha, double beta,
                                             std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
  std::vector<float> c0(std::size_t(a.rows) * std::size_t(n));
  for (float& x : c0) x = dist(rng);
  std::vector<float> c = c0;
  reference_spmm(b24, n, b.data(), n, c.data(), n, alpha, beta);
  const auto b_at = [&](std::int64_t k, std::int32_t j) {
    if constexpr (std::is_same_v<BValue, float>) return double(b[std::size_t(k * n + j)]);
    // 16-bit B is the matrix's own 16-bit type, as the plans take it: bf16 bits for a bf16 matrix.
    else if (b24.precision == Precision::bf16) return double(bf16_to_float(b[std::size_t(k * n + j)]));
    else return double(fp16_to_float(b[std::size_t(k * n + j)]));
  };
  const test::StorageRounding rounding = test::storage_rounding(b24);
  double result_norm = 0.0;
  for (std::int32_t i = 0; i < a.rows; ++i) {
    const std::int32_t k_i = a.row_ptr[std::size_t(i) + 1] - a.row_ptr[std::size_t(i)];
    const double subnormal = std::ldexp(rounding.subnormal, rounding.row_exponent[std::size_t(i)]);
    for (std::int32_t j = 0; j < n; ++j) {
      double exact = 0.0, magnitude = 0.0, storage = 0.0;
      for (std::int32_t p = a.row_ptr[std::size_t(i)]; p < a.row_ptr[std::size_t(i) + 1]; ++p) {
        const double av = a.values[std::size_t(p)], bv = b_at(a.col_idx[std::size_t(p)], j);
        exact += av * bv;
        magnitude += std::fabs(av * bv);
        storage += (rounding.unit * std::fabs(av) + subnormal) * std::fabs(bv);
      }
      const double c0v = double(c0[std::size_t(i) * std::size_t(n) + std::size_t(j)]);
      exact = alpha * exact + beta * c0v;
      storage *= std::fabs(alpha);
      const double sums = (k_i + 4) * std::ldexp(1.0, -52) *
                          (std::fabs(alpha) * magnitude * (1.0 + rounding.unit) + std::fabs(beta * c0v));
      const double bound = storage + sums + std::ldexp(1.0, -24) * (std::fabs(exact) + storage + sums);
      const double got = double(c[std::size_t(i) * std::size_t(n) + std::size_t(j)]);
      CAPTURE(i, j, got, exact, bound);
      REQUIRE(std::fabs(got - exact) <= bound);
      result_norm += got * got;
    }
  }
  REQUIRE(result_norm > 0.0);  // an all-zero C cannot pass
}

}  // namespace

TEST_CASE("reference_spmm in every precision matches the exact product within the storage rounding",
          "[precision][reference]") {
  const std::uint64_t seed = test::test_seed(64);
  INFO("seed " << seed);
  std::mt19937_64 rng(seed);
  CsrMatrix a = test::scattered_csr(133, 171, 17, seed);
  // Rows of very different scales, and a spread inside each row.
  for (std::int32_t r = 0; r < a.rows; ++r) {
    const double row_scale = std::pow(10.0, double(r % 13) - 6.0);
    for (std::int32_t p = a.row_ptr[std::size_t(r)]; p < a.row_ptr[std::size_t(r) + 1]; ++p)
      a.values[std::size_t(p)] *= row_scale * std::pow(10.0, -double(rng() % 4));
  }
  const std::int32_t n = 7;
  const std::vector<fp16_t> b16 = test::random_fp16(a.cols, n, seed + 1);
  std::vector<float> b32(std::size_t(a.cols) * n);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (float& x : b32) x = dist(rng);  // not fp16 values: B must be used exactly
  for (const Precision precision : kPrecisions)
    for (const ScalingPolicy scaling : {ScalingPolicy::per_row, ScalingPolicy::automatic})
      for (const auto& [layout, reorder] : {std::pair{TileLayout::aligned, Reordering::none},
                                            std::pair{TileLayout::condensed, Reordering::rcm}}) {
        CAPTURE(precision_name(precision), int(scaling), layout_name(layout));
        const Bcsr24Matrix b24 = convert_to_bcsr24(a, options_for(precision, scaling, layout, reorder));
        require_reference_exact_within_rounding(a, b24, n, b16, -1.25, 0.5, seed + 2);
        require_reference_exact_within_rounding(a, b24, n, b32, 0.75, 0.0, seed + 3);
      }
}
