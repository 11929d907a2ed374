// CSR -> BCSR-2:4 conversion (aligned layout) checked against brute force: classification, packing, scaling. The
// tile layout itself: test_tile_layout.cpp.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <set>
#include <vector>

#include "format/convert.hpp"
#include "bcsr24/error.hpp"
#include "bcsr24/half.hpp"
#include "format/tile_layout.hpp"
#include "test_support.hpp"

using namespace bcsr24;

namespace {

/// These tests check the aligned file-order layout (the thesis's BCSR) against brute force; test_layout.cpp
/// covers the reordered and condensed layouts that the default (automatic) options may choose.
Bcsr24Matrix aligned_bcsr24(const CsrMatrix& a, ConvertOptions options = {}) {
  options.layout = TileLayout::aligned;
  options.reorder = Reordering::none;
  return convert_to_bcsr24(a, options);
}

/// One power-of-two scale for the whole matrix (the policy before per-row scaling became the default).
ConvertOptions matrix_wide_scaling() {
  ConvertOptions options;
  options.scaling = ScalingPolicy::automatic;
  return options;
}

/// A matrix given densely, with a mask of stored entries (a stored 0.0 is an explicit zero).
struct DenseSource {
  std::int32_t rows = 0, cols = 0;
  std::vector<double> values;
  std::vector<char> stored;

  DenseSource(std::int32_t r, std::int32_t c)
      : rows(r), cols(c), values(std::size_t(r) * std::size_t(c), 0.0), stored(values.size(), 0) {}
  void set(std::int64_t r, std::int64_t c, double v) {
    values[std::size_t(r * cols + c)] = v;
    stored[std::size_t(r * cols + c)] = 1;
  }
  double at(std::int64_t r, std::int64_t c) const { return values[std::size_t(r * cols + c)]; }

  CsrMatrix csr() const {
    return bcsr24::test::csr_from_mask(rows, cols, stored, [this](std::int64_t r, std::int64_t c) { return at(r, c); });
  }
};

/// Element (r, c) of tile (tr, tc) of the source, 0 outside the matrix (padding).
double tile_element(const DenseSource& m, std::int64_t tr, std::int64_t tc, int r, int c) {
  const std::int64_t row = tr * kTileRows + r, col = tc * kTileCols + c;
  return (row < m.rows && col < m.cols) ? m.at(row, col) : 0.0;
}

/// Brute-force kind of a tile, straight from the definition.
TileKind brute_force_kind(const DenseSource& m, std::int64_t tr, std::int64_t tc) {
  bool any = false;
  for (int r = 0; r < kTileRows; ++r)
    for (int grp = 0; grp < 8; ++grp) {
      int count = 0;
      for (int q = 0; q < 4; ++q) count += tile_element(m, tr, tc, r, 4 * grp + q) != 0.0;
      if (count > 2) return TileKind::dense;
      any = any || count > 0;
    }
  return any ? TileKind::sparse24 : TileKind::zero;
}

/// The (idx0, idx1) pair the format prescribes for a group's nonzero positions.
std::pair<int, int> prescribed_pair(const std::vector<int>& positions) {
  if (positions.empty()) return {0, 1};
  if (positions.size() == 1) return positions[0] < 3 ? std::pair{positions[0], positions[0] + 1} : std::pair{2, 3};
  return {positions[0], positions[1]};
}

/// Exponent of row r of tile row tr as the conversion reports it (0 for padding rows).
int row_exponent_of(const Bcsr24Matrix& b, std::int64_t tr, int r) {
  const std::int64_t row = tr * kTileRows + r;
  return row < b.rows ? b.exponent_of_row(std::int32_t(row)) : 0;
}

/// Expected packed values and metadata of a 2:4 tile, computed element by element; each row scaled by the
/// exponent `b` reports for it.
void brute_force_pack24(const DenseSource& m, std::int64_t tr, std::int64_t tc, const Bcsr24Matrix& b,
                        std::vector<fp16_t>& values, std::vector<std::uint32_t>& metadata) {
  values.assign(kSparseTileValues, 0);
  metadata.assign(kSparseTileMetaWords, 0);
  for (int r = 0; r < kTileRows; ++r)
    for (int grp = 0; grp < 8; ++grp) {
      const int exponent = row_exponent_of(b, tr, r);
      std::vector<int> positions;
      for (int q = 0; q < 4; ++q)
        if (tile_element(m, tr, tc, r, 4 * grp + q) != 0.0) positions.push_back(q);
      const auto [i0, i1] = prescribed_pair(positions);
      values[std::size_t(sparse_value_index(r, 2 * grp))] = double_to_fp16(std::ldexp(tile_element(m, tr, tc, r, 4 * grp + i0), -exponent));
      values[std::size_t(sparse_value_index(r, 2 * grp + 1))] = double_to_fp16(std::ldexp(tile_element(m, tr, tc, r, 4 * grp + i1), -exponent));
      metadata[std::size_t(metadata_word(r, grp))] |= std::uint32_t(i0 | (i1 << 2)) << metadata_shift(r, grp);
    }
}

void brute_force_pack_dense(const DenseSource& m, std::int64_t tr, std::int64_t tc, const Bcsr24Matrix& b,
                            std::vector<fp16_t>& values) {
  values.assign(kDenseTileValues, 0);
  for (int r = 0; r < kTileRows; ++r)
    for (int c = 0; c < kTileCols; ++c)
      values[std::size_t(dense_value_index(r, c))] =
          double_to_fp16(std::ldexp(tile_element(m, tr, tc, r, c), -row_exponent_of(b, tr, r)));
}

/// Every nibble of a 2:4 list is one mma.sp accepts.
bool all_nibbles_valid(const TileList& list) {
  for (std::uint32_t w : list.metadata)
    for (int s = 0; s < 32; s += 4)
      if (!is_valid_metadata_nibble((w >> s) & 0xFu)) return false;
  return true;
}

/// Full brute-force comparison of a conversion with the source matrix.
void check_against_brute_force(const DenseSource& m, const Bcsr24Matrix& b) {
  const std::int64_t tile_rows = (m.rows + 15) / 16, tile_cols = (m.cols + 31) / 32;
  REQUIRE(b.rows == m.rows);
  REQUIRE(b.cols == m.cols);
  REQUIRE(b.tile_rows == tile_rows);
  REQUIRE(b.tile_cols == tile_cols);
  REQUIRE(b.sparse24.row_ptr.size() == std::size_t(tile_rows) + 1);
  REQUIRE(b.dense.row_ptr.size() == std::size_t(tile_rows) + 1);
  REQUIRE(b.sparse24.values.size() == std::size_t(b.sparse24.tiles()) * kSparseTileValues);
  REQUIRE(b.sparse24.metadata.size() == std::size_t(b.sparse24.tiles()) * kSparseTileMetaWords);
  REQUIRE(b.dense.values.size() == std::size_t(b.dense.tiles()) * kDenseTileValues);
  REQUIRE(b.dense.metadata.empty());
  REQUIRE(all_nibbles_valid(b.sparse24));
  REQUIRE(b.precision == Precision::fp16);
  REQUIRE(b.sparse24.values_lo.empty());
  REQUIRE(b.dense.values_lo.empty());
  // Per-row scaling: each row's largest magnitude lands in [2^14, 2^15); rows without nonzeros keep 0.
  REQUIRE(b.row_exponent.size() == (b.scaling.per_row ? std::size_t(m.rows) : 0));
  for (std::size_t i = 0; i < b.row_exponent.size(); ++i) {
    double row_max = 0.0;
    for (std::int64_t c = 0; c < m.cols; ++c) row_max = std::max(row_max, std::fabs(m.at(std::int64_t(i), c)));
    CAPTURE(i, row_max);
    REQUIRE(b.row_exponent[i] == (row_max > 0.0 ? std::ilogb(row_max) - 14 : 0));
  }

  std::int64_t nnz = 0, sparse_nnz = 0, dense_nnz = 0;
  std::vector<fp16_t> expected_values;
  std::vector<std::uint32_t> expected_meta;
  for (std::int64_t tr = 0; tr < tile_rows; ++tr) {
    std::vector<std::int32_t> want_sparse, want_dense;
    for (std::int64_t tc = 0; tc < tile_cols; ++tc) {
      const TileKind kind = brute_force_kind(m, tr, tc);
      std::int64_t tile_nnz = 0;
      for (int r = 0; r < 16; ++r)
        for (int c = 0; c < 32; ++c) tile_nnz += tile_element(m, tr, tc, r, c) != 0.0;
      nnz += tile_nnz;
      if (kind == TileKind::sparse24) { want_sparse.push_back(std::int32_t(tc)); sparse_nnz += tile_nnz; }
      if (kind == TileKind::dense) { want_dense.push_back(std::int32_t(tc)); dense_nnz += tile_nnz; }
    }
    CAPTURE(tr);
    const std::vector<std::int32_t> got_sparse(b.sparse24.col_idx.begin() + b.sparse24.row_ptr[std::size_t(tr)],
                                               b.sparse24.col_idx.begin() + b.sparse24.row_ptr[std::size_t(tr) + 1]);
    const std::vector<std::int32_t> got_dense(b.dense.col_idx.begin() + b.dense.row_ptr[std::size_t(tr)],
                                              b.dense.col_idx.begin() + b.dense.row_ptr[std::size_t(tr) + 1]);
    REQUIRE(got_sparse == want_sparse);
    REQUIRE(got_dense == want_dense);
    for (std::int32_t t = b.sparse24.row_ptr[std::size_t(tr)]; t < b.sparse24.row_ptr[std::size_t(tr) + 1]; ++t) {
      brute_force_pack24(m, tr, b.sparse24.col_idx[std::size_t(t)], b, expected_values, expected_meta);
      CAPTURE(t);
      REQUIRE(std::equal(expected_values.begin(), expected_values.end(), b.sparse24.values.begin() + t * kSparseTileValues));
      REQUIRE(std::equal(expected_meta.begin(), expected_meta.end(), b.sparse24.metadata.begin() + t * kSparseTileMetaWords));
    }
    for (std::int32_t t = b.dense.row_ptr[std::size_t(tr)]; t < b.dense.row_ptr[std::size_t(tr) + 1]; ++t) {
      brute_force_pack_dense(m, tr, b.dense.col_idx[std::size_t(t)], b, expected_values);
      CAPTURE(t);
      REQUIRE(std::equal(expected_values.begin(), expected_values.end(), b.dense.values.begin() + t * kDenseTileValues));
    }
  }
  REQUIRE(b.nnz == nnz);
  REQUIRE(b.sparse24_nnz == sparse_nnz);
  REQUIRE(b.dense_nnz == dense_nnz);

  // Decompressing gives back exactly the fp16-rounded (scaled) source.
  const std::vector<double> decoded = decode_to_dense(b);
  REQUIRE(decoded.size() == m.values.size());
  for (std::size_t i = 0; i < decoded.size(); ++i) {
    CAPTURE(i);
    const int e = b.exponent_of_row(std::int32_t(i / std::size_t(m.cols)));
    const double want = std::ldexp(double(fp16_to_float(double_to_fp16(std::ldexp(m.values[i], -e)))), e);
    REQUIRE(decoded[i] == want);
  }
}

/// A random group occupancy with at most `max_bits` set among 4 positions.
unsigned random_group(std::mt19937_64& rng, int max_bits) {
  for (;;) {
    const unsigned g = unsigned(rng() & 0xF);
    if (__builtin_popcount(g) <= max_bits) return g;
  }
}

/// Random matrix mixing every kind of tile: zero, 2:4 (groups of 0-2 nonzeros), barely dense (one 3-group),
/// random density, full, plus explicit zeros sprinkled everywhere.
DenseSource random_mixed_matrix(std::int32_t rows, std::int32_t cols, std::mt19937_64& rng) {
  DenseSource m(rows, cols);
  std::uniform_real_distribution<double> value(-1.0, 1.0);
  const auto nonzero = [&] {
    double v;
    do v = value(rng); while (v == 0.0);
    return v;
  };
  const std::int64_t tile_rows = (rows + 15) / 16, tile_cols = (cols + 31) / 32;
  for (std::int64_t tr = 0; tr < tile_rows; ++tr)
    for (std::int64_t tc = 0; tc < tile_cols; ++tc) {
      const int style = int(rng() % 6);
      const double density = double(rng() % 100) / 100.0;
      for (int r = 0; r < 16; ++r)
        for (int grp = 0; grp < 8; ++grp) {
          unsigned occupancy = 0;
          switch (style) {
            case 0: break;                                            // zero tile
            case 1: occupancy = random_group(rng, 2); break;          // 2:4
            case 2: occupancy = (r == 3 && grp == 5) ? 0x7 : random_group(rng, 2); break;  // one violation
            case 3: for (int q = 0; q < 4; ++q) occupancy |= (double(rng() % 1000) / 1000.0 < density) << q; break;
            case 4: occupancy = 0xF; break;                           // full
            case 5: occupancy = (rng() % 16 == 0) ? 1u << (rng() % 4) : 0; break;  // scattered
          }
          for (int q = 0; q < 4; ++q) {
            const std::int64_t row = tr * 16 + r, col = tc * 32 + 4 * grp + q;
            if (row >= rows || col >= cols) continue;
            if (occupancy & (1u << q)) m.set(row, col, nonzero());
            else if (rng() % 23 == 0) m.set(row, col, 0.0);  // explicit zero: must not count
          }
        }
    }
  return m;
}

/// random_mixed_matrix from a generator of its own, seeded with `seed`.
DenseSource random_mixed_matrix(std::int32_t rows, std::int32_t cols, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  return random_mixed_matrix(rows, cols, rng);
}

}  // namespace

TEST_CASE("every 4-column pattern in every group position classifies and packs like brute force", "[convert]") {
  // For each of the 16 occupancies of a group, in every (row, group) of a tile: the tile is zero, 2:4 or dense
  // exactly as the definition says, and a 2:4 tile packs, with the prescribed pair, and decodes exactly.
  for (unsigned pattern = 0; pattern < 16; ++pattern) {
    for (int row = 0; row < kTileRows; ++row) {
      for (int grp = 0; grp < 8; ++grp) {
        CAPTURE(pattern, row, grp);
        DenseSource m(16, 32);
        double tile[16 * 32] = {};
        for (int q = 0; q < 4; ++q)
          if (pattern & (1u << q)) {
            const double v = 1.0 + q + 0.25 * grp;  // distinct per position, exact in fp16
            m.set(row, 4 * grp + q, v);
            tile[row * 32 + 4 * grp + q] = v;
          }
        const int bits = __builtin_popcount(pattern);
        const TileKind want = bits == 0 ? TileKind::zero : bits <= 2 ? TileKind::sparse24 : TileKind::dense;
        REQUIRE(classify_tile(tile) == want);
        const Bcsr24Matrix b = aligned_bcsr24(m.csr());
        REQUIRE(b.sparse24.tiles() == (want == TileKind::sparse24 ? 1 : 0));
        REQUIRE(b.dense.tiles() == (want == TileKind::dense ? 1 : 0));
        check_against_brute_force(m, b);
        if (want == TileKind::sparse24) {
          const unsigned nibble = (b.sparse24.metadata[std::size_t(metadata_word(row, grp))] >> metadata_shift(row, grp)) & 0xFu;
          const unsigned i0 = nibble & 3u, i1 = nibble >> 2;
          REQUIRE(i0 < i1);
          if (bits == 2) REQUIRE(((1u << i0) | (1u << i1)) == pattern);
          if (bits == 1) {
            const unsigned p = unsigned(__builtin_ctz(pattern));
            REQUIRE(nibble == (p < 3 ? (p | (p + 1) << 2) : 0xEu));
          }
          // Every other group of the tile is empty and names (0, 1).
          for (int r = 0; r < 16; ++r)
            for (int g = 0; g < 8; ++g)
              if (r != row || g != grp)
                REQUIRE(((b.sparse24.metadata[std::size_t(metadata_word(r, g))] >> metadata_shift(r, g)) & 0xFu) == 0x4u);
        }
      }
    }
  }
}

TEST_CASE("classify_tile agrees with brute force on random tiles", "[convert]") {
  const std::uint64_t seed = bcsr24::test::test_seed(11);
  INFO("seed " << seed);
  std::mt19937_64 rng(seed);
  for (int n = 0; n < 3000; ++n) {
    DenseSource m(16, 32);
    double tile[16 * 32] = {};
    const int max_bits = int(rng() % 5);  // tiles of groups with up to 0..4 nonzeros
    const double violate = double(rng() % 4) / 200.0;
    for (int r = 0; r < 16; ++r)
      for (int grp = 0; grp < 8; ++grp) {
        const unsigned g = random_group(rng, (double(rng() % 1000) / 1000.0 < violate) ? 4 : std::min(max_bits, 2));
        for (int q = 0; q < 4; ++q)
          if (g & (1u << q)) {
            tile[r * 32 + 4 * grp + q] = double(1 + rng() % 7);
            m.set(r, 4 * grp + q, tile[r * 32 + 4 * grp + q]);
          }
      }
    const TileKind kind = classify_tile(tile);
    REQUIRE(kind == brute_force_kind(m, 0, 0));
    const Bcsr24Matrix b = aligned_bcsr24(m.csr());
    REQUIRE(b.sparse24.tiles() == (kind == TileKind::sparse24 ? 1 : 0));
    REQUIRE(b.dense.tiles() == (kind == TileKind::dense ? 1 : 0));
    check_against_brute_force(m, b);
  }
}

TEST_CASE("random matrices of awkward sizes convert exactly like brute force", "[convert]") {
  const std::uint64_t seed = bcsr24::test::test_seed(12345);
  INFO("seed " << seed);
  std::mt19937_64 rng(seed);
  const std::vector<std::pair<int, int>> sizes = {{37, 45}, {100, 77}, {1, 1},   {16, 32}, {17, 33},
                                                  {15, 31}, {1, 200}, {200, 1}, {64, 128}, {129, 257}};
  for (const auto& [rows, cols] : sizes) {
    for (int rep = 0; rep < 3; ++rep) {
      CAPTURE(rows, cols, rep);
      const DenseSource m = random_mixed_matrix(rows, cols, rng);
      const Bcsr24Matrix b = aligned_bcsr24(m.csr());
      check_against_brute_force(m, b);
      const TileCensus census = b.census();
      REQUIRE(census.tile_rows == b.tile_rows);
      REQUIRE(census.tile_cols == b.tile_cols);
      REQUIRE(census.zero_tiles + census.sparse24_tiles + census.dense_tiles == std::int64_t(b.tile_rows) * b.tile_cols);
      REQUIRE(census.nnz == census.sparse24_nnz + census.dense_nnz);
      REQUIRE(census.sparse24_bytes == b.sparse24.tile_bytes());
      REQUIRE(census.dense_bytes == b.dense.tile_bytes());
    }
  }
}

TEST_CASE("explicit zeros do not make a tile nonzero nor a group dense", "[convert]") {
  DenseSource m(20, 40);
  // Tile (0, 0): only explicit zeros -> zero tile.
  m.set(0, 0, 0.0);
  m.set(5, 7, 0.0);
  // Tile (1, 1): rows 16-19, cols 32-39: a group with 2 nonzeros and 2 explicit zeros -> 2:4.
  m.set(17, 32, 1.0);
  m.set(17, 33, 0.0);
  m.set(17, 34, 0.0);
  m.set(17, 35, -2.0);
  const Bcsr24Matrix b = aligned_bcsr24(m.csr());
  REQUIRE(b.nnz == 2);
  REQUIRE(b.dense.tiles() == 0);
  REQUIRE(b.sparse24.tiles() == 1);
  REQUIRE(b.sparse24.col_idx[0] == 1);
  REQUIRE(b.sparse24.row_ptr == std::vector<std::int32_t>{0, 0, 1});
  check_against_brute_force(m, b);
  const TileCensus census = b.census();
  CHECK(census.zero_tiles == 3);
  CHECK(census.empty_tile_rows == 1);
  CHECK(census.max_tiles_per_tile_row == 1);
  CHECK(census.sparse24_nnz == 2);
}

TEST_CASE("empty and degenerate matrices", "[convert]") {
  for (const auto& [rows, cols] : std::vector<std::pair<int, int>>{{0, 0}, {0, 5}, {5, 0}, {3, 3}}) {
    CAPTURE(rows, cols);
    DenseSource m(rows, cols);
    const Bcsr24Matrix b = aligned_bcsr24(m.csr());
    check_against_brute_force(m, b);
    CHECK(b.nnz == 0);
    CHECK(b.scaling.exponent == 0);
    CHECK(b.census().stored_tiles() == 0);
  }
}

TEST_CASE("force_dense puts every nonzero tile in the dense list", "[convert]") {
  const std::uint64_t seed = bcsr24::test::test_seed(7);
  INFO("seed " << seed);
  const DenseSource m = random_mixed_matrix(70, 90, seed);
  const Bcsr24Matrix normal = aligned_bcsr24(m.csr());
  ConvertOptions options;
  options.force_dense = true;
  const Bcsr24Matrix forced = aligned_bcsr24(m.csr(), options);
  REQUIRE(forced.sparse24.tiles() == 0);
  REQUIRE(forced.dense.tiles() == normal.sparse24.tiles() + normal.dense.tiles());
  REQUIRE(decode_to_dense(forced) == decode_to_dense(normal));
  REQUIRE(forced.dense_nnz == normal.nnz);
}

TEST_CASE("parallel conversion gives the same lists as one thread", "[convert]") {
  const std::uint64_t seed = bcsr24::test::test_seed(99);
  INFO("seed " << seed);
  // Big enough (over 2 x 65536 entries) to be split into several chunks.
  const DenseSource m = random_mixed_matrix(900, 1200, seed);
  const CsrMatrix csr = m.csr();
  REQUIRE(csr.nnz() > 3 * 65536);
  ConvertOptions one, many;
  one.threads = 1;
  many.threads = 3;
  const Bcsr24Matrix a = aligned_bcsr24(csr, one), b = aligned_bcsr24(csr, many);
  bcsr24::test::require_same_tiles(a.sparse24, b.sparse24);
  bcsr24::test::require_same_tiles(a.dense, b.dense);
  REQUIRE(a.nnz == b.nnz);
  REQUIRE(a.sparse24_nnz == b.sparse24_nnz);
  check_against_brute_force(m, b);
}

TEST_CASE("merge_to_dense_list holds every stored tile, dense, in tile-row and column order", "[convert]") {
  const std::uint64_t seed = bcsr24::test::test_seed(5);
  INFO("seed " << seed);
  const DenseSource m = random_mixed_matrix(90, 130, seed);
  const Bcsr24Matrix b = aligned_bcsr24(m.csr());
  REQUIRE(b.sparse24.tiles() > 0);
  REQUIRE(b.dense.tiles() > 0);
  const TileList merged = merge_to_dense_list(b);
  REQUIRE(merged.tiles() == b.sparse24.tiles() + b.dense.tiles());
  REQUIRE(merged.values.size() == std::size_t(merged.tiles()) * kDenseTileValues);
  REQUIRE(merged.metadata.empty());
  for (std::int32_t tr = 0; tr < b.tile_rows; ++tr) {
    REQUIRE(merged.row_ptr[std::size_t(tr) + 1] - merged.row_ptr[std::size_t(tr)] ==
            (b.sparse24.row_ptr[std::size_t(tr) + 1] - b.sparse24.row_ptr[std::size_t(tr)]) +
                (b.dense.row_ptr[std::size_t(tr) + 1] - b.dense.row_ptr[std::size_t(tr)]));
    for (std::int32_t t = merged.row_ptr[std::size_t(tr)] + 1; t < merged.row_ptr[std::size_t(tr) + 1]; ++t)
      REQUIRE(merged.col_idx[std::size_t(t)] > merged.col_idx[std::size_t(t) - 1]);
  }
  // As the dense list of a matrix without 2:4 tiles it decodes to the same matrix.
  Bcsr24Matrix as_dense = b;
  as_dense.dense = merged;
  as_dense.sparse24 = TileList{};
  as_dense.sparse24.row_ptr.assign(std::size_t(b.tile_rows) + 1, 0);
  REQUIRE(decode_to_dense(as_dense) == decode_to_dense(b));
}

TEST_CASE("fp16 range, matrix-wide scaling: large values are scaled down by an exact power of two", "[convert][scaling]") {
  const std::uint64_t seed = bcsr24::test::test_seed(31);
  INFO("seed " << seed);
  DenseSource m = random_mixed_matrix(40, 50, seed);
  for (std::size_t i = 0; i < m.values.size(); ++i) m.values[i] *= 1e6;
  m.set(3, 4, 1e6);
  const Bcsr24Matrix b = aligned_bcsr24(m.csr(), matrix_wide_scaling());
  CHECK(b.scaling.exponent > 0);
  CHECK(b.scaling.max_abs == 1e6);
  CHECK(b.scaling.overflow_count > 0);
  // Smallest exponent that brings the maximum under 65504.
  CHECK(std::ldexp(1e6, -b.scaling.exponent) <= kFp16Max);
  CHECK(std::ldexp(1e6, -(b.scaling.exponent - 1)) > kFp16Max);
  check_against_brute_force(m, b);

  ConvertOptions none;
  none.scaling = ScalingPolicy::none;
  CHECK_THROWS_AS(aligned_bcsr24(m.csr(), none), RangeError);
  try {
    aligned_bcsr24(m.csr(), none);
  } catch (const RangeError& e) {
    const std::string what = e.what();
    CHECK(what.find(std::to_string(b.scaling.overflow_count)) != std::string::npos);
    CHECK(what.find("1000000") != std::string::npos);
  }
  // Powers of two survive scaling exactly.
  DenseSource p(1, 3);
  p.set(0, 0, std::ldexp(1.0, 20));
  p.set(0, 2, -std::ldexp(3.0, 17));
  const Bcsr24Matrix pb = aligned_bcsr24(p.csr(), matrix_wide_scaling());
  CHECK(pb.scaling.exponent == 5);  // 2^20 * 2^-5 = 32768 <= 65504 < 65536
  CHECK(decode_to_dense(pb) == p.values);
}

TEST_CASE("fp16 range, matrix-wide scaling: tiny values are scaled up and counted", "[convert][scaling]") {
  const std::uint64_t seed = bcsr24::test::test_seed(32);
  INFO("seed " << seed);
  DenseSource m = random_mixed_matrix(40, 50, seed);
  for (std::size_t i = 0; i < m.values.size(); ++i) m.values[i] *= 1e-9;
  m.set(0, 0, 1e-9);
  const Bcsr24Matrix b = aligned_bcsr24(m.csr(), matrix_wide_scaling());
  CHECK(b.scaling.exponent < 0);
  CHECK(b.scaling.underflow_count > 0);
  // As far up as possible while the maximum stays within the 2^15 headroom.
  CHECK(std::ldexp(b.scaling.max_abs, -b.scaling.exponent) <= 32768.0);
  CHECK(std::ldexp(b.scaling.max_abs, -(b.scaling.exponent - 1)) > 32768.0);
  CHECK(b.scaling.flushed_count == 0);
  check_against_brute_force(m, b);

  // Without scaling the values flush to zero, and the report says so.
  ConvertOptions none;
  none.scaling = ScalingPolicy::none;
  const Bcsr24Matrix unscaled = aligned_bcsr24(m.csr(), none);
  CHECK(unscaled.scaling.exponent == 0);
  CHECK(unscaled.scaling.flushed_count == unscaled.scaling.underflow_count);
  CHECK(unscaled.scaling.flushed_count > 0);
  CHECK(unscaled.nnz == b.nnz);  // flushed values still count as nonzeros of the source
  check_against_brute_force(m, unscaled);

  // A range wider than fp16 can hold: the tiny value flushes even after scaling, and is counted.
  DenseSource wide(1, 2);
  wide.set(0, 0, 1000.0);
  wide.set(0, 1, 1e-12);
  const Bcsr24Matrix w = aligned_bcsr24(wide.csr(), matrix_wide_scaling());
  CHECK(w.scaling.exponent == -5);  // 1000 * 2^5 = 32000 <= 32768
  CHECK(w.scaling.flushed_count == 1);
  CHECK(w.scaling.min_abs_nonzero == 1e-12);
  // Values already in the normal range are left alone.
  DenseSource normal(1, 2);
  normal.set(0, 0, 1e-3);
  normal.set(0, 1, 2.0);
  CHECK(aligned_bcsr24(normal.csr(), matrix_wide_scaling()).scaling.exponent == 0);
}

TEST_CASE("subnormal results are counted (matrix-wide scaling)", "[convert][scaling]") {
  DenseSource m(1, 3);
  m.set(0, 0, 40000.0);          // prevents scaling up
  m.set(0, 1, 1e-6);             // fp16 subnormal
  m.set(0, 2, 1e-9);             // flushes
  const Bcsr24Matrix b = aligned_bcsr24(m.csr(), matrix_wide_scaling());
  CHECK(b.scaling.exponent == 0);
  CHECK(b.scaling.subnormal_count == 1);
  CHECK(b.scaling.flushed_count == 1);
  CHECK(b.scaling.underflow_count == 1);
  CHECK(b.scaling.overflow_count == 0);
  CHECK(b.scaling.min_abs_nonzero == 1e-9);
}

TEST_CASE("non-finite input raises RangeError, malformed CSR raises InvalidArgument", "[convert]") {
  for (double bad : {std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity(),
                     -std::numeric_limits<double>::infinity()}) {
    DenseSource m(20, 40);
    m.set(1, 1, 1.0);
    m.set(18, 37, bad);
    CAPTURE(bad);
    CHECK_THROWS_AS(aligned_bcsr24(m.csr()), RangeError);
    ConvertOptions none;
    none.scaling = ScalingPolicy::none;
    CHECK_THROWS_AS(aligned_bcsr24(m.csr(), none), RangeError);
  }
  CsrMatrix unsorted;
  unsorted.rows = 1;
  unsorted.cols = 4;
  unsorted.row_ptr = {0, 2};
  unsorted.col_idx = {2, 1};
  unsorted.values = {1.0, 1.0};
  CHECK_THROWS_AS(aligned_bcsr24(unsorted), InvalidArgument);
  CsrMatrix out_of_range = unsorted;
  out_of_range.col_idx = {1, 4};
  CHECK_THROWS_AS(aligned_bcsr24(out_of_range), InvalidArgument);
  CsrMatrix short_ptr = unsorted;
  short_ptr.row_ptr = {0};
  CHECK_THROWS_AS(aligned_bcsr24(short_ptr), InvalidArgument);
}
