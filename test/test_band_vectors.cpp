// The narrow-vector layout (lib/src/format/band_vectors.hpp): decoding the vectors gives back exactly the band's
// stored entries (the CSR rows, which are checked against the tiles in test_band_csr.cpp), the padding and fragment
// order are as the kernel assumes, and the layout's CPU product equals the CSR rows' on awkward matrices.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <set>
#include <tuple>
#include <vector>

#include "bcsr24/error.hpp"
#include "format/band_csr.hpp"
#include "format/band_vectors.hpp"
#include "format/convert.hpp"
#include "test_support.hpp"

using namespace bcsr24;

namespace {

const ConvertOptions kAlignedFileOrder = test::convert_policy(TileLayout::aligned, Reordering::none);
const ConvertOptions kCondensedRcm = test::convert_policy(TileLayout::condensed, Reordering::rcm);
const ConvertOptions kCondensedFileOrder = test::convert_policy(TileLayout::condensed, Reordering::none);

using Entry = std::tuple<std::int64_t, std::int32_t, std::uint16_t>;  // stored row, B row, value bits

/// The stored entries of `bands` as the CSR rows hold them.
std::vector<Entry> csr_entries(const Bcsr24Matrix& host, const std::vector<std::int32_t>& bands) {
  const detail::BandCsr csr = detail::extract_band_csr(host, bands);
  std::vector<Entry> out;
  for (std::size_t i = 0; i < bands.size(); ++i)
    for (int r = 0; r < kTileRows; ++r) {
      const std::size_t slot = i * kTileRows + std::size_t(r);
      for (std::int32_t e = csr.row_ptr[slot]; e < csr.row_ptr[slot + 1]; ++e)
        out.emplace_back(std::int64_t(bands[i]) * kTileRows + r, csr.b_row[std::size_t(e)], csr.values[std::size_t(e)]);
    }
  std::sort(out.begin(), out.end());
  return out;
}

/// Awkward matrices: rows and columns not multiples of 8/16/32, a window without entries, a dense row, a single
/// column, and random scattered rows.
std::vector<std::pair<const char*, CsrMatrix>> awkward_matrices(std::uint64_t seed) {
  std::vector<std::pair<const char*, CsrMatrix>> out;
  out.emplace_back("scattered 181 x 299", test::scattered_csr(181, 299, 13, seed));
  {
    // Rows 8..15 and 40..52 empty (whole windows without entries), row 3 dense, 77 x 45.
    std::vector<char> mask(77 * 45, 0);
    for (std::int64_t r = 0; r < 77; ++r)
      for (std::int64_t c = 0; c < 45; ++c) {
        if ((r >= 8 && r < 16) || (r >= 40 && r < 53)) continue;
        mask[std::size_t(r * 45 + c)] = r == 3 || (r * 7 + c * 3) % 11 == 0;
      }
    out.emplace_back("empty windows and a dense row", test::csr_from_mask(77, 45, mask, [](std::int64_t r, std::int64_t c) {
                       return 0.25 + double((r * 5 + c) % 9) / 16.0;
                     }));
  }
  {
    std::vector<char> mask(37, 1);  // every row holds the one column
    out.emplace_back("a single column", test::csr_from_mask(37, 1, mask, [](std::int64_t r, std::int64_t) {
                       return 1.0 - double(r) / 64.0;
                     }));
  }
  {
    // A banded, circuit-like matrix: 3 nonzeros per row around the diagonal, 203 rows.
    std::vector<char> mask(203 * 203, 0);
    for (std::int64_t r = 0; r < 203; ++r)
      for (std::int64_t c = std::max<std::int64_t>(0, r - 1); c <= std::min<std::int64_t>(202, r + 1); ++c)
        mask[std::size_t(r * 203 + c)] = 1;
    out.emplace_back("banded, 3 per row", test::csr_from_mask(203, 203, mask, [](std::int64_t r, std::int64_t c) {
                       return r == c ? 2.0 : -0.5;
                     }));
  }
  return out;
}

}  // namespace

TEST_CASE("vector_value_offset puts each lane's two B-fragment registers together", "[vectors]") {
  // Every (vector, row) of a group has its own slot, and lane 4r + t holds rows r of vectors 2t, 2t+1, 2t+8, 2t+9.
  std::set<int> slots;
  for (int k = 0; k < detail::kVectorGroup; ++k)
    for (int r = 0; r < detail::kWindowRows; ++r) slots.insert(detail::vector_value_offset(k, r));
  CHECK(slots.size() == std::size_t(detail::kVectorGroupValues));
  CHECK(*slots.rbegin() == detail::kVectorGroupValues - 1);
  for (int r = 0; r < 8; ++r)
    for (int t = 0; t < 4; ++t) {
      const int lane = 4 * r + t;
      CHECK(detail::vector_value_offset(2 * t, r) == 4 * lane);
      CHECK(detail::vector_value_offset(2 * t + 1, r) == 4 * lane + 1);
      CHECK(detail::vector_value_offset(2 * t + 8, r) == 4 * lane + 2);
      CHECK(detail::vector_value_offset(2 * t + 9, r) == 4 * lane + 3);
    }
}

TEST_CASE("narrow vectors decode to exactly the band's stored entries", "[vectors]") {
  const std::uint64_t seed = test::test_seed(931);
  INFO("seed " << seed);
  for (const auto& [name, a] : awkward_matrices(seed))
    for (const Precision precision : {Precision::fp16, Precision::bf16})
      for (const ConvertOptions& layout : {kAlignedFileOrder, kCondensedRcm, kCondensedFileOrder}) {
        ConvertOptions options = layout;
        options.precision = precision;
        const Bcsr24Matrix host = convert_to_bcsr24(a, options);
        INFO(name << ", " << precision_name(precision) << ", " << layout_name(host.layout) << "/"
                  << reordering_name(host.reordering));
        std::vector<std::int32_t> every(std::size_t(host.tile_rows)), odd;
        for (std::int32_t band = 0; band < host.tile_rows; ++band) {
          every[std::size_t(band)] = band;
          if (band % 2 == 1) odd.push_back(band);
        }
        for (const auto& bands : {every, odd}) {
          const detail::BandVectors v = detail::extract_band_vectors(host, bands);
          REQUIRE(v.windows() == std::int64_t(bands.size()) * detail::kWindowsPerBand);
          std::vector<Entry> decoded;
          for (const detail::VectorEntry& e : detail::decode_band_vectors(v))
            decoded.emplace_back(e.stored_row, e.b_row, e.value);
          std::sort(decoded.begin(), decoded.end());
          const std::vector<Entry> expected = csr_entries(host, bands);
          CHECK(decoded == expected);
          CHECK(v.nnz == std::int64_t(expected.size()));
          // Padding: a multiple of 16 vectors per window, fewer than 16 of them, each naming a real column.
          for (std::int64_t w = 0; w < v.windows(); ++w) {
            const std::int64_t slots = std::int64_t(v.group_ptr[std::size_t(w) + 1] - v.group_ptr[std::size_t(w)]) * 16;
            CHECK(slots - v.real_vectors[std::size_t(w)] < 16);
            CHECK(slots >= v.real_vectors[std::size_t(w)]);
            for (std::int64_t k = v.real_vectors[std::size_t(w)]; k < slots; ++k) {
              const std::int32_t col = v.col[std::size_t(std::int64_t(v.group_ptr[std::size_t(w)]) * 16 + k)];
              CHECK(col >= 0);
              CHECK(col < a.cols);
            }
          }
        }
        // The counts the cost model uses agree with the extracted layout, band by band.
        const std::vector<detail::BandVectorCounts> counts = detail::band_vector_counts(host);
        const detail::BandVectors v = detail::extract_band_vectors(host, every);
        for (std::int32_t band = 0; band < host.tile_rows; ++band) {
          std::int32_t vectors = 0, groups = 0, longest = 0;
          for (int h = 0; h < 2; ++h) {
            vectors += v.real_vectors[std::size_t(band * 2 + h)];
            const std::int32_t window = v.group_ptr[std::size_t(band * 2 + h) + 1] - v.group_ptr[std::size_t(band * 2 + h)];
            groups += window;
            longest = std::max(longest, window);
          }
          CHECK(counts[std::size_t(band)].vectors == vectors);
          CHECK(counts[std::size_t(band)].groups == groups);
          CHECK(counts[std::size_t(band)].longest_window_groups == longest);
        }
      }
}

TEST_CASE("the narrow vectors' CPU product equals the CSR rows'", "[vectors]") {
  const std::uint64_t seed = test::test_seed(932);
  INFO("seed " << seed);
  for (const auto& [name, a] : awkward_matrices(seed))
    for (const std::int32_t n : {1, 5, 16}) {
      const Bcsr24Matrix host = convert_to_bcsr24(a, kCondensedRcm);
      INFO(name << ", n = " << n);
      std::vector<std::int32_t> bands(std::size_t(host.tile_rows));
      for (std::int32_t band = 0; band < host.tile_rows; ++band) bands[std::size_t(band)] = band;
      const std::vector<std::uint16_t> b = test::random_fp16(a.cols, n + 3, seed + 1);
      const std::int64_t ldc = n + 2;
      std::vector<float> from_vectors(std::size_t(a.rows) * ldc, 0.5f), from_csr = from_vectors;
      detail::reference_spmm_band_vectors(detail::extract_band_vectors(host, bands), host, n, b.data(), n + 3,
                                          from_vectors.data(), ldc, 1.5, 0.25);
      detail::reference_spmm_band_csr(detail::extract_band_csr(host, bands), host, n, b.data(), n + 3,
                                      from_csr.data(), ldc, 1.5, 0.25);
      // Both sum exact products of 16-bit values in double: equal up to the order of additions.
      double largest = 0.0;
      for (std::size_t i = 0; i < from_csr.size(); ++i) {
        CHECK(from_vectors[i] == Approx(from_csr[i]).margin(1e-6));
        largest = std::max(largest, double(std::abs(from_csr[i])));
      }
      CHECK(largest > 0.5);  // not all untouched or zero
    }
}

TEST_CASE("narrow vectors refuse what has no vector form", "[vectors]") {
  const CsrMatrix a = test::scattered_csr(40, 50, 5, 7);
  ConvertOptions split = kAlignedFileOrder;
  split.precision = Precision::split;
  const Bcsr24Matrix split_host = convert_to_bcsr24(a, split);
  CHECK_THROWS_AS(detail::extract_band_vectors(split_host, {0}), InvalidArgument);
  const Bcsr24Matrix host = convert_to_bcsr24(a, kAlignedFileOrder);
  CHECK_THROWS_AS(detail::extract_band_vectors(host, {1, 0}), InvalidArgument);
  CHECK_THROWS_AS(detail::extract_band_vectors(host, {host.tile_rows}), InvalidArgument);
  const detail::BandVectors v = detail::extract_band_vectors(host, {0});
  std::vector<std::uint16_t> b(std::size_t(a.cols) * 4, 0);
  std::vector<float> c(std::size_t(a.rows) * 4, 0.0f);
  CHECK_THROWS_AS(detail::reference_spmm_band_vectors(v, host, 4, b.data(), 3, c.data(), 4, 1.0, 0.0),
                  InvalidArgument);
  detail::BandVectors broken = v;
  broken.group_ptr.back() += 1;
  CHECK_THROWS_AS(detail::decode_band_vectors(broken), InvalidArgument);
}

TEST_CASE("narrow vectors regrouped from a wider CSR copy equal those extracted from the tiles", "[vectors]") {
  const std::uint64_t seed = test::test_seed(933);
  INFO("seed " << seed);
  for (const auto& [name, a] : awkward_matrices(seed)) {
    INFO(name);
    const Bcsr24Matrix host = convert_to_bcsr24(a, kCondensedRcm);
    std::vector<std::int32_t> every(std::size_t(host.tile_rows)), some;
    for (std::int32_t band = 0; band < host.tile_rows; ++band) {
      every[std::size_t(band)] = band;
      if (band % 3 != 1) some.push_back(band);
    }
    const detail::BandCsr csr = detail::extract_band_csr(host, every);
    const detail::BandVectors direct = detail::extract_band_vectors(host, some);
    const detail::BandVectors regrouped = detail::band_vectors_from_csr(csr, some);
    CHECK(regrouped.bands == direct.bands);
    CHECK(regrouped.window == direct.window);
    CHECK(regrouped.group_ptr == direct.group_ptr);
    CHECK(regrouped.col == direct.col);
    CHECK(regrouped.values == direct.values);
    CHECK(regrouped.real_vectors == direct.real_vectors);
    CHECK(regrouped.nnz == direct.nnz);
    if (host.tile_rows > 1) {
      const detail::BandCsr first = detail::extract_band_csr(host, {0});
      CHECK_THROWS_AS(detail::band_vectors_from_csr(first, {1}), InvalidArgument);
    }
  }
}
