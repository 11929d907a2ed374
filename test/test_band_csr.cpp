// The CUDA-core layout (lib/src/format/band_csr.hpp): band statistics and CSR rows extracted from the stored
// tiles, checked against the tile reference (reference_spmm) on every layout, so the CPU oracle covers it.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <tuple>
#include <utility>
#include <vector>

#include "format/convert.hpp"
#include "bcsr24/error.hpp"
#include "bcsr24/half.hpp"
#include "format/reference.hpp"
#include "bcsr24_testkit/synthetic.hpp"
#include "format/band_csr.hpp"
#include "test_support.hpp"

using namespace bcsr24;

namespace {

const ConvertOptions kAlignedFileOrder = test::convert_policy(TileLayout::aligned, Reordering::none);
const ConvertOptions kAlignedRcm = test::convert_policy(TileLayout::aligned, Reordering::rcm);
const ConvertOptions kCondensedFileOrder = test::convert_policy(TileLayout::condensed, Reordering::none);
const ConvertOptions kCondensedRcm = test::convert_policy(TileLayout::condensed, Reordering::rcm);

/// A product of the CSR-row tests: a matrix of awkward sizes (rows and columns not multiples of 16 / 32, a last band
/// with padding rows) from `seed`, n, and a random fp16 B of n columns from seed + 1.
std::tuple<CsrMatrix, std::int32_t, std::vector<std::uint16_t>> awkward_product(std::uint64_t seed, std::int32_t n) {
  CsrMatrix a = test::scattered_csr(181, 299, 13, seed);
  std::vector<std::uint16_t> b = test::random_fp16(a.cols, n, seed + 1);
  return {std::move(a), n, std::move(b)};
}

}  // namespace

TEST_CASE("band statistics count every stored nonzero once", "[band_csr]") {
  const std::uint64_t seed = test::test_seed(901);
  INFO("seed " << seed);
  const CsrMatrix a = test::scattered_csr(203, 317, 11, seed);
  for (const ConvertOptions& options : {kAlignedFileOrder, kCondensedRcm}) {
    const Bcsr24Matrix host = convert_to_bcsr24(a, options);
    const std::vector<detail::BandStats> stats = detail::band_stats(host);
    REQUIRE(stats.size() == std::size_t(host.tile_rows));
    std::int64_t nnz = 0, sparse = 0, dense = 0, rows = 0;
    std::int32_t longest = 0;
    for (const auto& s : stats) {
      nnz += s.nnz();
      sparse += s.sparse24_tiles;
      dense += s.dense_tiles;
      rows += s.rows;
      longest = std::max(longest, s.max_row_nnz);
    }
    CHECK(nnz == a.nnz());  // values in [-1, 1) never flush to fp16 zero
    CHECK(sparse == host.sparse24.tiles());
    CHECK(dense == host.dense.tiles());
    CHECK(rows == a.rows);
    std::int32_t source_longest = 0;
    for (std::int32_t r = 0; r < a.rows; ++r) source_longest = std::max(source_longest, a.row_ptr[r + 1] - a.row_ptr[r]);
    CHECK(longest == source_longest);
  }
}

TEST_CASE("CSR rows of chosen bands multiply like the tiles they came from", "[band_csr]") {
  const std::uint64_t seed = test::test_seed(902);
  INFO("seed " << seed);
  const auto [a, n, b] = awkward_product(seed, 7);
  for (const ConvertOptions& options : {kAlignedFileOrder, kAlignedRcm, kCondensedFileOrder, kCondensedRcm}) {
    const Bcsr24Matrix host = convert_to_bcsr24(a, options);
    INFO(layout_name(host.layout) << "/" << reordering_name(host.reordering));
    // Every other band, including the last (padded) one.
    std::vector<std::int32_t> bands;
    for (std::int32_t band = 0; band < host.tile_rows; band += 2) bands.push_back(band);
    if (bands.back() != host.tile_rows - 1) bands.push_back(host.tile_rows - 1);
    const detail::BandCsr csr = detail::extract_band_csr(host, bands);
    REQUIRE(csr.slots() == std::int64_t(bands.size()) * 16);
    REQUIRE(csr.row_ptr.size() == std::size_t(csr.slots()) + 1);
    for (std::int64_t s = 0; s < csr.slots(); ++s)
      for (std::int32_t e = csr.row_ptr[s]; e + 1 < csr.row_ptr[s + 1]; ++e) REQUIRE(csr.b_row[e] < csr.b_row[e + 1]);

    // Reference on the tiles for all rows; the CSR product must match it on the rows of the chosen bands and
    // leave every other row as it was.
    const double alpha = 0.75, beta = -0.5;
    std::vector<float> c0(std::size_t(a.rows) * n);
    for (std::size_t i = 0; i < c0.size(); ++i) c0[i] = float(int(i % 13) - 6) * 0.125f;
    std::vector<float> c_tiles = c0, c_csr = c0;
    reference_spmm(host, n, b.data(), n, c_tiles.data(), n, alpha, beta);
    detail::reference_spmm_band_csr(csr, host, n, b.data(), n, c_csr.data(), n, alpha, beta);
    std::vector<char> in_csr(std::size_t(a.rows), 0);
    for (std::int32_t row : csr.out_row)
      if (row >= 0) in_csr[std::size_t(row)] = 1;
    std::int64_t covered = 0;
    for (std::int32_t r = 0; r < a.rows; ++r) {
      covered += in_csr[std::size_t(r)];
      for (std::int32_t j = 0; j < n; ++j) {
        const std::size_t i = std::size_t(r) * n + j;
        if (in_csr[std::size_t(r)]) {
          // Same fp16 values and B, summed in double in a different order: equal to a few double ulps.
          REQUIRE(c_csr[i] == Approx(c_tiles[i]).margin(1e-6));
        } else {
          REQUIRE(c_csr[i] == c0[i]);
        }
      }
    }
    CHECK(covered > 0);
    CHECK(covered < a.rows);
  }
}

TEST_CASE("CSR extraction keeps empty rows and skips padding rows", "[band_csr]") {
  // Rows 3 and 20 empty; 21 rows, so band 1 has 11 padding rows.
  CsrMatrix a;
  a.rows = 21;
  a.cols = 40;
  a.row_ptr.assign(22, 0);
  for (std::int32_t r = 0; r < a.rows; ++r) {
    if (r != 3 && r != 20)
      for (std::int32_t c = r % 5; c < a.cols; c += 9) {
        a.col_idx.push_back(c);
        a.values.push_back(1.0 + r);
      }
    a.row_ptr[r + 1] = std::int32_t(a.col_idx.size());
  }
  const Bcsr24Matrix host = convert_to_bcsr24(a, kAlignedFileOrder);
  const detail::BandCsr csr = detail::extract_band_csr(host, {0, 1});
  REQUIRE(csr.slots() == 32);
  CHECK(csr.row_ptr[4] - csr.row_ptr[3] == 0);
  CHECK(csr.out_row[3] == 3);
  CHECK(csr.out_row[16 + 4] == 20);
  CHECK(csr.row_ptr[21] - csr.row_ptr[20] == 0);
  for (int s = 16 + 5; s < 32; ++s) CHECK(csr.out_row[s] == -1);
  CHECK(csr.nnz() == a.nnz());
  CHECK(csr.bytes() == std::int64_t(33 * 4 + 32 * 4 + a.nnz() * 6));
  CHECK_THROWS_AS(detail::extract_band_csr(host, {1, 0}), InvalidArgument);
  CHECK_THROWS_AS(detail::extract_band_csr(host, {2}), InvalidArgument);
}

TEST_CASE("split matrices: CSR rows carry the low parts, and a value whose high part is 0 still counts", "[band_csr][precision]") {
  const std::uint64_t seed = test::test_seed(903);
  INFO("seed " << seed);
  const auto [a, n, b] = awkward_product(seed, 5);
  std::vector<float> b32(std::size_t(a.cols) * n);
  for (std::size_t i = 0; i < b32.size(); ++i) b32[i] = float(0.001 * double(i % 997) - 0.5);
  for (const auto& layout : {TileLayout::aligned, TileLayout::condensed}) {
    ConvertOptions options = test::convert_policy(layout, Reordering::rcm);
    options.precision = Precision::split;
    const Bcsr24Matrix host = convert_to_bcsr24(a, options);
    INFO(layout_name(host.layout));
    std::vector<std::int32_t> bands(std::size_t(host.tile_rows));
    std::iota(bands.begin(), bands.end(), 0);
    const detail::BandCsr csr = detail::extract_band_csr(host, bands);
    REQUIRE(csr.precision == Precision::split);
    REQUIRE(csr.values_lo.size() == csr.values.size());
    CHECK(csr.nnz() == a.nnz());
    CHECK(csr.bytes() == std::int64_t(csr.row_ptr.size() * 4 + csr.out_row.size() * 4) + csr.nnz() * 8);
    // Every entry decodes to exactly what the tiles decode to.
    const std::vector<double> dense = decode_to_dense(host);
    for (std::int64_t slot = 0; slot < csr.slots(); ++slot) {
      const std::int32_t row = csr.out_row[std::size_t(slot)];
      if (row < 0) continue;
      for (std::int32_t e = csr.row_ptr[std::size_t(slot)]; e < csr.row_ptr[std::size_t(slot) + 1]; ++e) {
        const double value = std::ldexp(double(fp16_to_float(csr.values[std::size_t(e)])) +
                                            std::ldexp(double(fp16_to_float(csr.values_lo[std::size_t(e)])), -11),
                                        host.exponent_of_row(row));
        REQUIRE(value == dense[std::size_t(row) * std::size_t(a.cols) + std::size_t(csr.b_row[std::size_t(e)])]);
      }
    }
    // The CSR product equals the tile product, with fp16 B and with fp32 B.
    std::vector<float> c_tiles(std::size_t(a.rows) * n, 0.0f), c_csr = c_tiles;
    reference_spmm(host, n, b.data(), n, c_tiles.data(), n, 1.25, 0.0);
    detail::reference_spmm_band_csr(csr, host, n, b.data(), n, c_csr.data(), n, 1.25, 0.0);
    for (std::size_t i = 0; i < c_tiles.size(); ++i) REQUIRE(c_csr[i] == Approx(c_tiles[i]).margin(1e-6));
    reference_spmm(host, n, b32.data(), n, c_tiles.data(), n, 1.25, 0.0);
    detail::reference_spmm_band_csr(csr, host, n, b32.data(), n, c_csr.data(), n, 1.25, 0.0);
    double norm = 0.0;
    for (std::size_t i = 0; i < c_tiles.size(); ++i) {
      REQUIRE(c_csr[i] == Approx(c_tiles[i]).margin(1e-6));
      norm += std::fabs(c_csr[i]);
    }
    CHECK(norm > 0.0);
  }

  // Row 0: 1 and 2^-44. Per-row scaling stores them times 2^14: 2^-30 rounds to an fp16 0, but its low part
  // 2^-30 * 2^11 = 2^-19 is an fp16 subnormal. fp16 storage flushes the value; split keeps it.
  CsrMatrix tiny;
  tiny.rows = 1;
  tiny.cols = 2;
  tiny.row_ptr = {0, 2};
  tiny.col_idx = {0, 1};
  tiny.values = {1.0, std::ldexp(1.0, -44)};
  for (const Precision precision : {Precision::fp16, Precision::split}) {
    ConvertOptions options = kAlignedFileOrder;
    options.precision = precision;
    const Bcsr24Matrix host = convert_to_bcsr24(tiny, options);
    const bool split = precision == Precision::split;
    CAPTURE(precision_name(precision));
    CHECK(host.scaling.flushed_count == (split ? 0 : 1));
    CHECK(detail::band_stats(host)[0].nnz() == (split ? 2 : 1));
    const detail::BandCsr csr = detail::extract_band_csr(host, {0});
    REQUIRE(csr.nnz() == (split ? 2 : 1));
    if (split) {
      CHECK(csr.values[1] == 0);
      CHECK(csr.values_lo[1] == double_to_fp16(std::ldexp(1.0, -19)));
      CHECK(decode_to_dense(host)[1] == std::ldexp(1.0, -44));
    }
  }
}
