// .b24 versions: what versions 2 and 3 added (layout, reordering, row_order, b_rows, precision, row exponents)
// round-trips and is checked on loading, and version 1 and 2 files still load.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "b24_test_files.hpp"
#include "bcsr24/error.hpp"
#include "format/convert.hpp"
#include "format/serialize.hpp"
#include "format/tile_layout.hpp"
#include "serialize_support.hpp"
#include "test_support.hpp"

using namespace bcsr24;
using namespace bcsr24::test;
namespace fs = std::filesystem;

namespace {

/// Stored row i is original row rows-1-i; padding rows of the last band are -1.
std::vector<std::int32_t> reversed_row_order(const Bcsr24Matrix& a) {
  std::vector<std::int32_t> order(std::size_t(a.tile_rows) * kTileRows, -1);
  for (std::int32_t i = 0; i < a.rows; ++i) order[std::size_t(i)] = a.rows - 1 - i;
  return order;
}

/// A hand-built version-2 matrix from an aligned one: gathered B rows (the implicit ones) and a row map.
/// condensed: col_idx becomes each tile's ordinal among its band's tiles (both lists).
Bcsr24Matrix gathered_variant(Bcsr24Matrix a, bool condensed) {
  a.sparse24.b_rows = implicit_b_rows(a.sparse24, a.cols);
  a.dense.b_rows = implicit_b_rows(a.dense, a.cols);
  a.row_order = reversed_row_order(a);
  a.reordering = Reordering::rcm;
  if (condensed) {
    a.layout = TileLayout::condensed;
    for (std::int32_t tr = 0; tr < a.tile_rows; ++tr) {
      std::vector<std::int32_t> band;
      for (const TileList* list : {&a.sparse24, &a.dense})
        for (std::int32_t t = list->row_ptr[std::size_t(tr)]; t < list->row_ptr[std::size_t(tr) + 1]; ++t)
          band.push_back(list->col_idx[std::size_t(t)]);
      std::sort(band.begin(), band.end());
      for (TileList* list : {&a.sparse24, &a.dense})
        for (std::int32_t t = list->row_ptr[std::size_t(tr)]; t < list->row_ptr[std::size_t(tr) + 1]; ++t) {
          std::int32_t& c = list->col_idx[std::size_t(t)];
          c = std::int32_t(std::lower_bound(band.begin(), band.end(), c) - band.begin());
        }
    }
  }
  return a;
}

/// What a version 1 or 2 file holds of `a`: everything but the storage errors of the census, which load as 0.
Bcsr24Matrix without_storage_errors(Bcsr24Matrix a) {
  a.scaling.max_flushed_relative = 0.0;
  a.scaling.max_relative_error = 0.0;
  a.scaling.frobenius_relative_error = 0.0;
  return a;
}

/// Loads `bytes`, an old version's file of `a`, and checks that it holds `a` (old versions have no storage errors).
Bcsr24Matrix load_old_version(const Bcsr24Matrix& a, const std::vector<unsigned char>& bytes, const std::string& name) {
  TempFile file(name);
  write_bytes(file.path(), bytes, bytes.size());
  Bcsr24Matrix b = load_bcsr24(file.path());
  require_identical(without_storage_errors(a), b);
  return b;
}

/// Saving `b` (loaded from an old version) writes a version-3 file of `size` bytes that loads back identical.
void require_saved_as_version_3(const Bcsr24Matrix& b, std::size_t size, const std::string& name) {
  TempFile v3(name);
  save_bcsr24(v3.path(), b);
  REQUIRE(read_bytes(v3.path()).size() == size);
  require_identical(b, load_bcsr24(v3.path()));
}

/// An old version's reading path still checks everything: every truncation of `bytes` (each of the first 200
/// sizes, then every 101st), the byte at `flip_at` flipped (checksum) and, with a valid checksum, the u32 at
/// `offset` set to `value` (an error naming `forged_field`) are refused.
void require_old_version_checked(const std::vector<unsigned char>& bytes, std::size_t flip_at, std::size_t offset,
                                 std::uint32_t value, const std::string& forged_field, const std::string& name) {
  TempFile bad(name);
  for (std::size_t size = 0; size < bytes.size(); size += (size < 200 ? 1 : 101)) {
    CAPTURE(size);
    write_bytes(bad.path(), bytes, size);
    require_rejected(bad.path());
  }
  std::vector<unsigned char> flipped = bytes;
  flipped[flip_at] ^= 1;
  write_bytes(bad.path(), flipped, flipped.size());
  require_rejected(bad.path(), "checksum");
  std::vector<unsigned char> forged = bytes;
  put_u32(forged, offset, value);
  fix_checksum(forged);
  write_bytes(bad.path(), forged, forged.size());
  require_rejected(bad.path(), forged_field);
}

}  // namespace

TEST_CASE("version 3 round-trips layout, reordering, row_order, b_rows, precision and row exponents bit-exactly",
          "[serialize]") {
  const std::uint64_t seed = bcsr24::test::test_seed(7);
  INFO("seed " << seed);
  const Bcsr24Matrix base = aligned_sample(37, 70, seed);  // edge tiles in both directions
  REQUIRE(base.sparse24.tiles() > 0);
  REQUIRE(base.dense.tiles() > 0);

  std::vector<Bcsr24Matrix> samples = {gathered_variant(base, false), gathered_variant(base, true)};
  for (const Precision precision : {Precision::bf16, Precision::split})
    for (const ScalingPolicy scaling : {ScalingPolicy::per_row, ScalingPolicy::automatic})
      samples.push_back(gathered_variant(aligned_sample(37, 70, seed, scaling, precision), true));
  Bcsr24Matrix rows_only = base;  // a row map without gathered B rows (rcm rows of a non-square matrix)
  rows_only.row_order = reversed_row_order(base);
  rows_only.reordering = Reordering::rcm;
  samples.push_back(rows_only);
  Bcsr24Matrix condensed_empty;  // condensed, no tiles at all: b_rows may be empty
  condensed_empty.rows = 20;
  condensed_empty.cols = 40;
  condensed_empty.tile_rows = 2;
  condensed_empty.tile_cols = 2;
  condensed_empty.sparse24.row_ptr.assign(3, 0);
  condensed_empty.dense.row_ptr.assign(3, 0);
  condensed_empty.layout = TileLayout::condensed;
  samples.push_back(condensed_empty);
  // Whatever the converter makes of the new options must round-trip too.
  for (const TileLayout layout : {TileLayout::condensed, TileLayout::aligned}) {
    ConvertOptions options;
    options.layout = layout;
    options.reorder = Reordering::rcm;
    options.precision = layout == TileLayout::condensed ? Precision::split : Precision::fp16;
    samples.push_back(convert_to_bcsr24(bcsr24::test::xdys_matrix(100, 100, 10, 20, seed + 1), options));
  }

  for (const Bcsr24Matrix& a : samples) {
    CAPTURE(a.rows, a.cols, layout_name(a.layout), reordering_name(a.reordering), a.row_order.size(),
            a.sparse24.b_rows.size(), a.dense.b_rows.size(), precision_name(a.precision), a.row_exponent.size());
    TempFile file("v3");
    save_bcsr24(file.path(), a);
    const std::vector<unsigned char> bytes = read_bytes(file.path());
    std::uint32_t version = 0;
    std::memcpy(&version, bytes.data() + 8, 4);
    REQUIRE(version == 3);
    REQUIRE(version == kB24VersionWithoutChoices);  // version 4 only with tuned choices
    REQUIRE(bytes[12] == std::uint8_t(a.layout));
    REQUIRE(bytes[13] == std::uint8_t(a.reordering));
    REQUIRE(bytes[160] == std::uint8_t(a.precision));
    REQUIRE(bytes[161] == (a.scaling.per_row ? 1 : 0));
    REQUIRE(bytes.size() == v3_offsets(a).crc + 4);
    const Bcsr24Matrix b = load_bcsr24(file.path());
    require_identical(a, b);
    TempFile again("v3again");
    save_bcsr24(again.path(), b);
    REQUIRE(read_bytes(again.path()) == bytes);
  }
}

TEST_CASE("version 1 files still load, as aligned tiles in file order", "[serialize]") {
  const std::uint64_t seed = bcsr24::test::test_seed(8);
  INFO("seed " << seed);
  // Version 1 knows one matrix-wide exponent and fp16 only.
  const ScalingPolicy matrix_wide = ScalingPolicy::automatic;
  for (const Bcsr24Matrix& a : {aligned_sample(37, 70, seed, matrix_wide), aligned_sample(64, 64, seed + 1, matrix_wide),
                                aligned_sample(0, 0, seed, matrix_wide), aligned_sample(3, 1, seed, matrix_wide)}) {
    CAPTURE(a.rows, a.cols);
    const std::vector<unsigned char> bytes = v1_bytes(a);
    const Bcsr24Matrix b = load_old_version(a, bytes, "v1");
    CHECK(b.layout == TileLayout::aligned);
    CHECK(b.reordering == Reordering::none);
    CHECK(b.row_order.empty());
    CHECK(b.sparse24.b_rows.empty());
    CHECK(b.dense.b_rows.empty());
    CHECK(b.precision == Precision::fp16);
    CHECK(b.row_exponent.empty());
    // Saving it writes version 3: 24 bytes of version-2 counts and 48 of version-3 fields more, no new arrays.
    require_saved_as_version_3(b, bytes.size() + 24 + 48, "v1to3");
  }

  // The version-1 reading path still checks everything: truncation, checksum, structure.
  const Bcsr24Matrix a = aligned_sample(37, 70, seed, matrix_wide);
  const std::vector<unsigned char> bytes = v1_bytes(a);
  // The forged field: the first 2:4 tile column, set to the grid's width.
  require_old_version_checked(bytes, 300, 136 + 4 * (std::size_t(a.tile_rows) + 1), std::uint32_t(a.tile_cols),
                              "tile column", "v1bad");
}

TEST_CASE("version 2 files still load, as fp16 without row exponents", "[serialize]") {
  const std::uint64_t seed = bcsr24::test::test_seed(13);
  INFO("seed " << seed);
  const Bcsr24Matrix base = aligned_sample(37, 70, seed, ScalingPolicy::automatic);
  Bcsr24Matrix rows_only = base;
  rows_only.row_order = reversed_row_order(base);
  rows_only.reordering = Reordering::rcm;
  for (const Bcsr24Matrix& a : {base, gathered_variant(base, false), gathered_variant(base, true), rows_only,
                                aligned_sample(0, 0, seed, ScalingPolicy::automatic)}) {
    CAPTURE(a.rows, a.cols, layout_name(a.layout), reordering_name(a.reordering));
    const std::vector<unsigned char> bytes = v2_bytes(a);
    const Bcsr24Matrix b = load_old_version(a, bytes, "v2");
    CHECK(b.precision == Precision::fp16);
    CHECK_FALSE(b.scaling.per_row);
    CHECK(b.row_exponent.empty());
    CHECK(b.sparse24.values_lo.empty());
    // Saving it writes version 3, 48 bytes longer (its new header fields; no new arrays).
    require_saved_as_version_3(b, bytes.size() + 48, "v2to3");
  }

  // The version-2 reading path still checks sizes and content.
  const Bcsr24Matrix a = gathered_variant(base, true);
  const std::vector<unsigned char> bytes = v2_bytes(a);
  // The forged field: row_order[0], set out of range.
  require_old_version_checked(bytes, 400, 160, std::uint32_t(a.rows), "row_order", "v2bad");
}

// Every byte and every length of such files: test_b24_damage.cpp. Here, through files, the truncations that must
// be named as such, at the boundaries of the arrays the version-2 and version-3 headers added.
TEST_CASE("truncated version 3 files with row_order, b_rows and row exponents are named truncated", "[serialize]") {
  for (const Precision precision : {Precision::fp16, Precision::split}) {
    CAPTURE(precision_name(precision));
    const Bcsr24Matrix a =
        gathered_variant(aligned_sample(20, 40, bcsr24::test::test_seed(9), ScalingPolicy::per_row, precision), true);
    TempFile file("full"), cut("cut");
    save_bcsr24(file.path(), a);
    const std::vector<unsigned char> bytes = read_bytes(file.path());
    const FileOffsets o = v3_offsets(a);
    REQUIRE(bytes.size() == o.crc + 4);
    for (const std::size_t size : {std::size_t{0}, std::size_t{5}, std::size_t{10}, std::size_t{211}, o.row_exponent,
                                   o.sparse_values_lo + 3, o.sparse_b_rows, o.sparse_b_rows + 5, o.dense_values_lo,
                                   o.dense_b_rows, o.crc, o.crc + 3}) {
      CAPTURE(size);
      write_bytes(cut.path(), bytes, size);
      require_rejected(cut.path(), "truncated");
    }
    std::vector<unsigned char> flipped = bytes;
    flipped[o.sparse_values_lo + 1] ^= 0x40;
    write_bytes(cut.path(), flipped, flipped.size());
    require_rejected(cut.path(), "checksum mismatch");
  }
}

TEST_CASE("bad layout, row_order and b_rows are rejected even with a valid checksum", "[serialize]") {
  const Bcsr24Matrix base = aligned_sample(37, 70, bcsr24::test::test_seed(10));
  const Bcsr24Matrix a = gathered_variant(base, true);
  REQUIRE(a.rows == 37);  // last band: stored rows 37..47 are padding
  TempFile file("full"), bad("forged");
  save_bcsr24(file.path(), a);
  const std::vector<unsigned char> bytes = read_bytes(file.path());
  const FileOffsets o = v3_offsets(a);

  const auto forge = [&](const std::vector<unsigned char>& source, std::size_t offset, std::uint32_t value,
                         const std::string& fragment) {
    CAPTURE(offset, value, fragment);
    std::vector<unsigned char> damaged = source;
    std::memcpy(damaged.data() + offset, &value, 4);
    fix_checksum(damaged);
    write_bytes(bad.path(), damaged, damaged.size());
    require_rejected(bad.path(), fragment);
  };
  const auto row_order_at = [&](std::size_t i) { return o.row_order + 4 * i; };
  forge(bytes, row_order_at(3), 37, "outside [-1, 37)");              // out of range
  forge(bytes, row_order_at(3), std::uint32_t(-2), "outside [-1, 37)");
  forge(bytes, row_order_at(3), std::uint32_t(a.row_order[4]), "appears twice");  // duplicate
  forge(bytes, row_order_at(0), std::uint32_t(-1), "marked as padding");         // -1 inside the matrix
  forge(bytes, row_order_at(40), 0, "padding row");                               // padding row mapped
  forge(bytes, o.sparse_b_rows + 4 * 5, 70, "b_rows");                             // past cols
  forge(bytes, o.sparse_b_rows + 4 * 5, std::uint32_t(-2), "b_rows");
  forge(bytes, o.dense_b_rows, 70, "b_rows");
  forge(bytes, o.sparse_col, std::uint32_t(-1), "band ordinal");                  // condensed ordinals
  forge(bytes, o.dense_col, 99, "band ordinal");

  // Layout and reordering bytes.
  std::vector<unsigned char> patched = bytes;
  patched[12] = std::uint8_t(TileLayout::automatic);
  fix_checksum(patched);
  write_bytes(bad.path(), patched, patched.size());
  require_rejected(bad.path(), "layout");
  patched = bytes;
  patched[13] = std::uint8_t(Reordering::automatic);
  fix_checksum(patched);
  write_bytes(bad.path(), patched, patched.size());
  require_rejected(bad.path(), "reordering");
  patched = bytes;
  patched[14] = 1;
  fix_checksum(patched);
  write_bytes(bad.path(), patched, patched.size());
  require_rejected(bad.path(), "reserved");

  // Array counts in the header that are neither 0 nor the full size.
  forge(bytes, 136, std::uint32_t(a.row_order.size() - 1), "row_order has");
  forge(bytes, 144, 32, "b_rows has");
  forge(bytes, 152, 0, "");  // file now longer than described

  // Condensed tiles without b_rows: an aligned file (no b_rows) whose layout byte says condensed.
  TempFile plain("plain");
  save_bcsr24(plain.path(), base);
  patched = read_bytes(plain.path());
  patched[12] = std::uint8_t(TileLayout::condensed);
  fix_checksum(patched);
  write_bytes(bad.path(), patched, patched.size());
  require_rejected(bad.path(), "no b_rows");

  // A nonzero in a column whose b_rows entry is -1: gathered lists use b_rows, not column >= cols.
  bool found = false;
  for (std::int64_t t = 0; t < a.dense.tiles() && !found; ++t)
    for (int c = 0; c < kTileCols && !found; ++c) {
      if (a.dense.b_rows[std::size_t(t * kTileCols + c)] == -1) continue;
      for (int r = 0; r < kTileRows && !found; ++r)
        if ((a.dense.values[std::size_t(t * kDenseTileValues + dense_value_index(r, c))] & 0x7FFF) != 0) {
          found = true;
          forge(bytes, o.dense_b_rows + 4 * std::size_t(t * kTileCols + c), std::uint32_t(-1), "outside the matrix");
        }
    }
  REQUIRE(found);
}

TEST_CASE("bad precision fields and values are rejected even with a valid checksum", "[serialize]") {
  const Bcsr24Matrix a = aligned_sample(37, 70, bcsr24::test::test_seed(14), ScalingPolicy::per_row, Precision::split);
  REQUIRE(a.rows == 37);  // last band: stored rows 37..47 are padding
  REQUIRE(a.dense.tiles() > 0);
  TempFile file("full"), bad("forged");
  save_bcsr24(file.path(), a);
  const std::vector<unsigned char> bytes = read_bytes(file.path());
  const FileOffsets o = v3_offsets(a);
  const auto forge = [&](std::size_t offset, const auto& value, const std::string& fragment) {
    CAPTURE(offset, fragment);
    std::vector<unsigned char> damaged = bytes;
    std::memcpy(damaged.data() + offset, &value, sizeof value);
    fix_checksum(damaged);
    write_bytes(bad.path(), damaged, damaged.size());
    require_rejected(bad.path(), fragment);
  };
  forge(160, std::uint8_t{3}, "precision byte 3");
  forge(161, std::uint8_t{2}, "per-row flag");
  forge(161, std::uint8_t{0}, "row_exponent has 37 entries");  // exponents without the flag
  forge(162, std::uint16_t{1}, "reserved");
  forge(172, std::uint32_t{1}, "reserved");
  forge(164, std::int32_t{2000}, "row exponent range");
  forge(168, std::int32_t{a.scaling.min_row_exponent - 1}, "row exponent range");
  forge(176, -1.0, "storage error");
  forge(184, std::numeric_limits<double>::quiet_NaN(), "storage error");
  forge(192, std::numeric_limits<double>::infinity(), "storage error");
  forge(200, std::int64_t{36}, "row_exponent has 36 entries");
  forge(o.row_exponent + 2 * 2, std::int16_t{5000}, "row_exponent of row 2");
  forge(o.sparse_values_lo, std::uint16_t{0x7C00}, "infinite");
  forge(o.dense_values_lo + 2 * 17, std::uint16_t{0xFE00}, "infinite");

  // A low part in the padding: row 15 of a tile in the last band lies outside the 37 rows.
  const std::int32_t last = a.tile_rows - 1;
  const bool sparse = a.sparse24.row_ptr[std::size_t(last)] < a.sparse24.row_ptr[std::size_t(last) + 1];
  const TileList& list = sparse ? a.sparse24 : a.dense;
  const std::size_t t = std::size_t(list.row_ptr[std::size_t(last)]);
  REQUIRE(std::int64_t(t) < list.tiles());
  const std::size_t at = sparse ? o.sparse_values_lo + 2 * (t * kSparseTileValues + std::size_t(sparse_value_index(15, 0)))
                                : o.dense_values_lo + 2 * (t * kDenseTileValues + std::size_t(dense_value_index(15, 0)));
  forge(at, std::uint16_t{0x3C00}, "outside the matrix");

  // bf16 bits are read as bf16: 0x7C00 is a finite bf16 (2^121), 0x7F80 its infinity.
  const Bcsr24Matrix b = aligned_sample(37, 70, bcsr24::test::test_seed(14), ScalingPolicy::per_row, Precision::bf16);
  REQUIRE(b.dense.tiles() > 0);
  TempFile bf16_file("bf16");
  save_bcsr24(bf16_file.path(), b);
  const std::vector<unsigned char> bf16_bytes = read_bytes(bf16_file.path());
  const FileOffsets ob = v3_offsets(b);
  std::size_t nonzero = ob.dense_values;
  while (bf16_bytes[nonzero] == 0 && bf16_bytes[nonzero + 1] == 0) nonzero += 2;  // a stored nonzero (not padding)
  for (const auto& [bits, loads] : {std::pair{std::uint16_t{0x7C00}, true}, std::pair{std::uint16_t{0x7F80}, false}}) {
    CAPTURE(bits);
    std::vector<unsigned char> patched = bf16_bytes;
    std::memcpy(patched.data() + nonzero, &bits, 2);
    fix_checksum(patched);
    write_bytes(bad.path(), patched, patched.size());
    if (loads) CHECK(load_bcsr24(bad.path()).precision == Precision::bf16);
    else require_rejected(bad.path(), "infinite");
  }
}
