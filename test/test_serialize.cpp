// .b24 files: bit-exact round trips, and every kind of damage rejected with FileFormatError naming the file.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "format/convert.hpp"
#include "format/tile_layout.hpp"
#include "bcsr24/error.hpp"
#include "format/serialize.hpp"
#include "bcsr24_testkit/synthetic.hpp"
#include "b24_test_files.hpp"
#include "test_support.hpp"

using namespace bcsr24;
using bcsr24::test::fix_checksum;
using bcsr24::test::put_u32;
using bcsr24::test::read_bytes;
using bcsr24::test::v1_bytes;
using bcsr24::test::v2_bytes;
using bcsr24::test::write_bytes;
namespace fs = std::filesystem;

namespace {

/// A scratch file removed when the test ends.
class TempFile {
 public:
  explicit TempFile(const std::string& stem) {
    static int counter = 0;
    path_ = (fs::temp_directory_path() /
             ("bcsr24_test_" + std::to_string(::getpid()) + "_" + stem + "_" + std::to_string(counter++) + ".b24"))
                .string();
  }
  ~TempFile() {
    std::error_code ignored;
    fs::remove(path_, ignored);
  }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

void require_identical(const Bcsr24Matrix& a, const Bcsr24Matrix& b) {
  REQUIRE(a.rows == b.rows);
  REQUIRE(a.cols == b.cols);
  REQUIRE(a.tile_rows == b.tile_rows);
  REQUIRE(a.tile_cols == b.tile_cols);
  REQUIRE(a.nnz == b.nnz);
  REQUIRE(a.sparse24_nnz == b.sparse24_nnz);
  REQUIRE(a.dense_nnz == b.dense_nnz);
  for (const auto& [x, y] : {std::pair{&a.sparse24, &b.sparse24}, std::pair{&a.dense, &b.dense}}) {
    REQUIRE(x->row_ptr == y->row_ptr);
    REQUIRE(x->col_idx == y->col_idx);
    REQUIRE(x->values == y->values);
    REQUIRE(x->values_lo == y->values_lo);
    REQUIRE(x->metadata == y->metadata);
    REQUIRE(x->b_rows == y->b_rows);
  }
  REQUIRE(a.precision == b.precision);
  REQUIRE(a.row_exponent == b.row_exponent);
  REQUIRE(a.scaling.per_row == b.scaling.per_row);
  REQUIRE(a.scaling.min_row_exponent == b.scaling.min_row_exponent);
  REQUIRE(a.scaling.max_row_exponent == b.scaling.max_row_exponent);
  REQUIRE(std::memcmp(&a.scaling.max_flushed_relative, &b.scaling.max_flushed_relative, sizeof(double)) == 0);
  REQUIRE(std::memcmp(&a.scaling.max_relative_error, &b.scaling.max_relative_error, sizeof(double)) == 0);
  REQUIRE(std::memcmp(&a.scaling.frobenius_relative_error, &b.scaling.frobenius_relative_error, sizeof(double)) == 0);
  REQUIRE(a.layout == b.layout);
  REQUIRE(a.reordering == b.reordering);
  REQUIRE(a.row_order == b.row_order);
  REQUIRE(a.scaling.exponent == b.scaling.exponent);
  REQUIRE(std::memcmp(&a.scaling.max_abs, &b.scaling.max_abs, sizeof(double)) == 0);
  REQUIRE(std::memcmp(&a.scaling.min_abs_nonzero, &b.scaling.min_abs_nonzero, sizeof(double)) == 0);
  REQUIRE(a.scaling.overflow_count == b.scaling.overflow_count);
  REQUIRE(a.scaling.underflow_count == b.scaling.underflow_count);
  REQUIRE(a.scaling.subnormal_count == b.scaling.subnormal_count);
  REQUIRE(a.scaling.flushed_count == b.scaling.flushed_count);
}

Bcsr24Matrix sample_matrix(std::int32_t rows, std::int32_t cols, std::uint64_t seed, double scale = 1.0,
                           const ConvertOptions& options = {}) {
  CsrMatrix a = bcsr24::test::xdys_matrix(rows, cols, 20, 30, seed);
  for (double& v : a.values) v *= scale;
  return convert_to_bcsr24(a, options);
}

ConvertOptions with_precision(Precision precision, ScalingPolicy scaling = ScalingPolicy::per_row) {
  ConvertOptions options;
  options.precision = precision;
  options.scaling = scaling;
  return options;
}

/// Aligned tiles in file order: the layout the byte offsets of the forging tests assume.
ConvertOptions aligned_options(ScalingPolicy scaling = ScalingPolicy::per_row, Precision precision = Precision::fp16) {
  ConvertOptions options;
  options.layout = TileLayout::aligned;
  options.reorder = Reordering::none;
  options.scaling = scaling;
  options.precision = precision;
  return options;
}

/// Byte offsets of a version-3 file's arrays (docs/FORMAT.md, section 7).
struct FileOffsets {
  std::size_t row_order, row_exponent, sparse_row_ptr, sparse_col, sparse_values, sparse_values_lo, sparse_meta,
      sparse_b_rows, dense_row_ptr, dense_col, dense_values, dense_values_lo, dense_b_rows, crc;
};
FileOffsets v3_offsets(const Bcsr24Matrix& a) {
  FileOffsets o{};
  const std::size_t S = std::size_t(a.sparse24.tiles()), D = std::size_t(a.dense.tiles());
  const std::size_t row_ptr = (std::size_t(a.tile_rows) + 1) * 4;
  const std::size_t lo = a.precision == Precision::split ? 1 : 0;
  o.row_order = 208;
  o.row_exponent = o.row_order + a.row_order.size() * 4;
  o.sparse_row_ptr = o.row_exponent + a.row_exponent.size() * 2;
  o.sparse_col = o.sparse_row_ptr + row_ptr;
  o.sparse_values = o.sparse_col + 4 * S;
  o.sparse_values_lo = o.sparse_values + 512 * S;
  o.sparse_meta = o.sparse_values_lo + 512 * S * lo;
  o.sparse_b_rows = o.sparse_meta + 64 * S;
  o.dense_row_ptr = o.sparse_b_rows + 4 * a.sparse24.b_rows.size();
  o.dense_col = o.dense_row_ptr + row_ptr;
  o.dense_values = o.dense_col + 4 * D;
  o.dense_values_lo = o.dense_values + 1024 * D;
  o.dense_b_rows = o.dense_values_lo + 1024 * D * lo;
  o.crc = o.dense_b_rows + 4 * a.dense.b_rows.size();
  return o;
}

/// Expects load to fail with FileFormatError whose message names the file (and `fragment`, if given).
void require_rejected(const std::string& path, const std::string& fragment = "") {
  try {
    load_bcsr24(path);
    FAIL("load_bcsr24 accepted a damaged file");
  } catch (const FileFormatError& e) {
    const std::string what = e.what();
    CAPTURE(what);
    REQUIRE(what.find(path) != std::string::npos);
    if (!fragment.empty()) REQUIRE(what.find(fragment) != std::string::npos);
  }
}

}  // namespace

TEST_CASE("save -> load round-trips bit-exactly", "[serialize]") {
  const std::uint64_t seed = bcsr24::test::test_seed(3);
  INFO("seed " << seed);
  const std::vector<Bcsr24Matrix> samples = {
      sample_matrix(200, 333, seed), sample_matrix(512, 512, seed + 1),
      sample_matrix(37, 45, seed + 2, 1e7, with_precision(Precision::fp16, ScalingPolicy::automatic)),  // scaled
      sample_matrix(0, 0, seed), sample_matrix(5, 0, seed), sample_matrix(1, 1, seed),
      sample_matrix(37, 45, seed + 3, 1e7),  // per-row scaled
      sample_matrix(70, 99, seed + 4, 1e30, with_precision(Precision::bf16)),
      sample_matrix(70, 99, seed + 5, 1e-30, with_precision(Precision::bf16, ScalingPolicy::automatic)),
      sample_matrix(70, 99, seed + 6, 1.0, with_precision(Precision::split)),
      sample_matrix(33, 65, seed + 7, 3.0, with_precision(Precision::split, ScalingPolicy::automatic)),
      sample_matrix(0, 0, seed, 1.0, with_precision(Precision::split))};
  for (const Bcsr24Matrix& a : samples) {
    CAPTURE(a.rows, a.cols);
    TempFile file("roundtrip");
    save_bcsr24(file.path(), a);
    const Bcsr24Matrix b = load_bcsr24(file.path());
    require_identical(a, b);
    // Saving what was loaded gives the same bytes.
    TempFile again("roundtrip2");
    save_bcsr24(again.path(), b);
    REQUIRE(read_bytes(file.path()) == read_bytes(again.path()));
  }
  CHECK(samples[2].scaling.exponent > 0);
  CHECK(samples[6].scaling.per_row);
  CHECK(samples[9].sparse24.values_lo.size() == samples[9].sparse24.values.size());
}

TEST_CASE("truncated files are rejected at every offset", "[serialize]") {
  const Bcsr24Matrix a = sample_matrix(40, 70, bcsr24::test::test_seed(4));
  TempFile file("full"), cut("cut");
  save_bcsr24(file.path(), a);
  const std::vector<unsigned char> bytes = read_bytes(file.path());
  REQUIRE(bytes.size() > 200);
  for (std::size_t size = 0; size < bytes.size(); size += (size < 200 ? 1 : 97)) {
    CAPTURE(size);
    write_bytes(cut.path(), bytes, size);
    require_rejected(cut.path());
  }
  write_bytes(cut.path(), bytes, bytes.size() - 1);
  require_rejected(cut.path(), "truncated");
  // Trailing garbage is damage too.
  std::vector<unsigned char> longer = bytes;
  longer.push_back(0);
  write_bytes(cut.path(), longer, longer.size());
  require_rejected(cut.path());
}

TEST_CASE("wrong magic, wrong version, missing file", "[serialize]") {
  const Bcsr24Matrix a = sample_matrix(20, 40, 6);
  TempFile file("full"), bad("bad");
  save_bcsr24(file.path(), a);
  const std::vector<unsigned char> bytes = read_bytes(file.path());

  std::vector<unsigned char> magic = bytes;
  std::memcpy(magic.data(), "BCSR25\0\0", 8);
  write_bytes(bad.path(), magic, magic.size());
  require_rejected(bad.path(), "not a .b24 file");

  std::vector<unsigned char> version = bytes;
  const std::uint32_t future = kB24FileVersion + 1;
  std::memcpy(version.data() + 8, &future, 4);
  fix_checksum(version);
  write_bytes(bad.path(), version, version.size());
  require_rejected(bad.path(), "version");

  const std::string text = "%%MatrixMarket matrix coordinate real general\n1 1 1\n1 1 1\n";
  write_bytes(bad.path(), std::vector<unsigned char>(text.begin(), text.end()), text.size());
  require_rejected(bad.path(), "not a .b24 file");

  write_bytes(bad.path(), bytes, 0);
  require_rejected(bad.path());

  require_rejected((fs::temp_directory_path() / "bcsr24_no_such_file.b24").string());
}

TEST_CASE("structurally broken content is rejected even with a valid checksum", "[serialize]") {
  // A 16 x 64 matrix with one 2:4 tile at tile column 0 and one dense tile at tile column 1.
  CsrMatrix m;
  m.rows = 16;
  m.cols = 64;
  m.row_ptr.assign(17, 0);
  for (int r = 0; r < 16; ++r) {
    m.col_idx.push_back(r % 32);
    m.values.push_back(1.0 + r);
    for (int c = 32; c < 36; ++c) {
      m.col_idx.push_back(c);
      m.values.push_back(-1.0 - c);
    }
    m.row_ptr[std::size_t(r) + 1] = std::int32_t(m.col_idx.size());
  }
  const Bcsr24Matrix a = convert_to_bcsr24(m, aligned_options());
  REQUIRE(a.sparse24.tiles() == 1);
  REQUIRE(a.dense.tiles() == 1);
  TempFile file("full"), bad("forged");
  save_bcsr24(file.path(), a);
  const std::vector<unsigned char> bytes = read_bytes(file.path());
  // Payload offsets (docs/FORMAT.md): header 208 bytes, no row_order, 16 row exponents (2 each), then 2:4
  // row_ptr (2 x 4), col_idx (4), values (512), metadata (64), no b_rows, dense row_ptr (8), col_idx (4), values
  // (1024), no b_rows, CRC (4).
  const std::size_t sparse_row_ptr = 208 + 32, sparse_col = sparse_row_ptr + 8, sparse_values = sparse_col + 4,
                    sparse_meta = sparse_values + 512, dense_row_ptr = sparse_meta + 64, dense_col = dense_row_ptr + 8,
                    dense_values = dense_col + 4;
  REQUIRE(bytes.size() == dense_values + 1024 + 4);
  REQUIRE(v3_offsets(a).sparse_row_ptr == sparse_row_ptr);

  const auto forge = [&](std::size_t offset, std::uint32_t value, const std::string& fragment) {
    std::vector<unsigned char> damaged = bytes;
    std::memcpy(damaged.data() + offset, &value, 4);
    fix_checksum(damaged);
    write_bytes(bad.path(), damaged, damaged.size());
    require_rejected(bad.path(), fragment);
  };
  forge(sparse_meta, 0x00000000u, "metadata");               // nibble 0x0 is not a valid pair
  forge(sparse_meta + 60, 0xFFFFFFFFu, "metadata");          // nibble 0xF neither
  forge(sparse_col, 2, "tile column");                       // tile column out of range (tile_cols = 2)
  forge(dense_col, 0, "both");                               // same tile in both lists
  forge(sparse_row_ptr + 4, 0, "row_ptr");                   // row_ptr no longer ends at the tile count
  forge(dense_values, 0x7C00u, "infinite");                  // inf value
  forge(16, 17, "tile grid");                                // rows changed: tile grid no longer matches
  forge(56, 5, "tile counts");                               // 2:4 tile count changed: sizes disagree
  forge(72, 5000, "exponent");                               // absurd scale exponent
  forge(32, 1, "nonzero counts");                            // nnz inconsistent with the per-list counts

  // A nonzero in the padding of an edge tile: an 8 x 20 matrix whose only tile is an edge tile.
  const CsrMatrix small = bcsr24::test::single_entry_csr(8, 20, 2.0);
  const Bcsr24Matrix edge = convert_to_bcsr24(small, aligned_options());
  TempFile edge_file("edge");
  save_bcsr24(edge_file.path(), edge);
  std::vector<unsigned char> edge_bytes = read_bytes(edge_file.path());
  // Row 15 of the tile lies beyond the matrix's 8 rows; its group 0 names columns (0, 1). Store a 1 there.
  const std::size_t values_at = v3_offsets(edge).sparse_values;
  const std::size_t index = std::size_t(sparse_value_index(15, 0));
  const std::uint16_t one = 0x3C00;
  std::memcpy(edge_bytes.data() + values_at + 2 * index, &one, 2);
  fix_checksum(edge_bytes);
  write_bytes(bad.path(), edge_bytes, edge_bytes.size());
  require_rejected(bad.path(), "outside the matrix");
}

TEST_CASE("save reports an unwritable path", "[serialize]") {
  const Bcsr24Matrix a = sample_matrix(16, 32, 1);
  CHECK_THROWS_AS(save_bcsr24("/nonexistent_dir_bcsr24/x.b24", a), Error);
}

// ---- version 2: layout, reordering, row_order, b_rows ---------------------------------------------------

namespace {

/// B-row indices equal to the implicit ones of an aligned list: tile column c, slot j -> 32c + j, -1 past cols.
std::vector<std::int32_t> implicit_b_rows(const TileList& list, std::int32_t cols) {
  std::vector<std::int32_t> b_rows;
  for (const std::int32_t c : list.col_idx)
    for (int j = 0; j < kTileCols; ++j) {
      const std::int64_t row = std::int64_t{c} * kTileCols + j;
      b_rows.push_back(row < cols ? std::int32_t(row) : -1);
    }
  return b_rows;
}

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

Bcsr24Matrix aligned_sample(std::int32_t rows, std::int32_t cols, std::uint64_t seed,
                            ScalingPolicy scaling = ScalingPolicy::per_row, Precision precision = Precision::fp16) {
  return convert_to_bcsr24(bcsr24::test::xdys_matrix(rows, cols, 30, 30, seed), aligned_options(scaling, precision));
}

/// What a version 1 or 2 file holds of `a`: everything but the storage errors of the census, which load as 0.
Bcsr24Matrix without_storage_errors(Bcsr24Matrix a) {
  a.scaling.max_flushed_relative = 0.0;
  a.scaling.max_relative_error = 0.0;
  a.scaling.frobenius_relative_error = 0.0;
  return a;
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
    TempFile file("v1");
    const std::vector<unsigned char> bytes = v1_bytes(a);
    write_bytes(file.path(), bytes, bytes.size());
    const Bcsr24Matrix b = load_bcsr24(file.path());
    require_identical(without_storage_errors(a), b);
    CHECK(b.layout == TileLayout::aligned);
    CHECK(b.reordering == Reordering::none);
    CHECK(b.row_order.empty());
    CHECK(b.sparse24.b_rows.empty());
    CHECK(b.dense.b_rows.empty());
    CHECK(b.precision == Precision::fp16);
    CHECK(b.row_exponent.empty());
    // Saving it writes version 3: 24 bytes of version-2 counts and 48 of version-3 fields more, no new arrays.
    TempFile v3("v1to3");
    save_bcsr24(v3.path(), b);
    REQUIRE(read_bytes(v3.path()).size() == bytes.size() + 24 + 48);
    require_identical(b, load_bcsr24(v3.path()));
  }

  // The version-1 reading path still checks everything: truncation, checksum, structure.
  const Bcsr24Matrix a = aligned_sample(37, 70, seed, matrix_wide);
  const std::vector<unsigned char> bytes = v1_bytes(a);
  TempFile bad("v1bad");
  for (std::size_t size = 0; size < bytes.size(); size += (size < 200 ? 1 : 101)) {
    CAPTURE(size);
    write_bytes(bad.path(), bytes, size);
    require_rejected(bad.path());
  }
  std::vector<unsigned char> flipped = bytes;
  flipped[300] ^= 1;
  write_bytes(bad.path(), flipped, flipped.size());
  require_rejected(bad.path(), "checksum");
  std::vector<unsigned char> forged = bytes;
  put_u32(forged, 136 + 4 * (std::size_t(a.tile_rows) + 1), std::uint32_t(a.tile_cols));  // first 2:4 tile column
  fix_checksum(forged);
  write_bytes(bad.path(), forged, forged.size());
  require_rejected(bad.path(), "tile column");
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
    TempFile file("v2");
    const std::vector<unsigned char> bytes = v2_bytes(a);
    write_bytes(file.path(), bytes, bytes.size());
    const Bcsr24Matrix b = load_bcsr24(file.path());
    require_identical(without_storage_errors(a), b);
    CHECK(b.precision == Precision::fp16);
    CHECK_FALSE(b.scaling.per_row);
    CHECK(b.row_exponent.empty());
    CHECK(b.sparse24.values_lo.empty());
    // Saving it writes version 3, 48 bytes longer (its new header fields; no new arrays).
    TempFile v3("v2to3");
    save_bcsr24(v3.path(), b);
    REQUIRE(read_bytes(v3.path()).size() == bytes.size() + 48);
    require_identical(b, load_bcsr24(v3.path()));
  }

  // The version-2 reading path still checks sizes and content.
  const Bcsr24Matrix a = gathered_variant(base, true);
  const std::vector<unsigned char> bytes = v2_bytes(a);
  TempFile bad("v2bad");
  for (std::size_t size = 0; size < bytes.size(); size += (size < 200 ? 1 : 101)) {
    CAPTURE(size);
    write_bytes(bad.path(), bytes, size);
    require_rejected(bad.path());
  }
  std::vector<unsigned char> flipped = bytes;
  flipped[400] ^= 1;
  write_bytes(bad.path(), flipped, flipped.size());
  require_rejected(bad.path(), "checksum");
  std::vector<unsigned char> forged = bytes;
  put_u32(forged, 160, std::uint32_t(a.rows));  // row_order[0] out of range
  fix_checksum(forged);
  write_bytes(bad.path(), forged, forged.size());
  require_rejected(bad.path(), "row_order");
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

TEST_CASE("unknown versions are refused naming the version", "[serialize]") {
  const Bcsr24Matrix a = aligned_sample(20, 40, 11);
  TempFile file("full"), bad("version");
  save_bcsr24(file.path(), a);
  const std::vector<unsigned char> bytes = read_bytes(file.path());
  for (const std::uint32_t version : {0u, 5u, 0xFFFFFFFFu}) {
    CAPTURE(version);
    std::vector<unsigned char> patched = bytes;
    put_u32(patched, 8, version);
    fix_checksum(patched);
    write_bytes(bad.path(), patched, patched.size());
    require_rejected(bad.path(), "version " + std::to_string(version));
    require_rejected(bad.path(), "reads versions 1 to 4");
  }
  // A file relabelled as another version does not load: 3 as 4 (no tuned-choice section), 2 or 1, 2 as 3 or 1,
  // 1 as 2.
  const Bcsr24Matrix matrix_wide = aligned_sample(20, 40, 11, ScalingPolicy::automatic);
  for (const auto& [source, label] : {std::pair{bytes, 4u}, std::pair{bytes, 2u}, std::pair{bytes, 1u},
                                      std::pair{v2_bytes(matrix_wide), 3u},
                                      std::pair{v2_bytes(matrix_wide), 1u}, std::pair{v1_bytes(matrix_wide), 2u}}) {
    CAPTURE(label);
    std::vector<unsigned char> relabelled = source;
    put_u32(relabelled, 8, label);
    fix_checksum(relabelled);
    write_bytes(bad.path(), relabelled, relabelled.size());
    require_rejected(bad.path());
  }
  // Too short to hold the version.
  write_bytes(bad.path(), bytes, 10);
  require_rejected(bad.path(), "truncated");
}

TEST_CASE("save refuses inconsistent layout fields", "[serialize]") {
  const Bcsr24Matrix base = aligned_sample(37, 70, 12);
  TempFile file("refused");
  Bcsr24Matrix a = base;
  a.layout = TileLayout::automatic;
  CHECK_THROWS_AS(save_bcsr24(file.path(), a), InvalidArgument);
  a = base;
  a.reordering = Reordering::automatic;
  CHECK_THROWS_AS(save_bcsr24(file.path(), a), InvalidArgument);
  a = base;
  a.row_order = {0, 1, 2};
  CHECK_THROWS_AS(save_bcsr24(file.path(), a), InvalidArgument);
  a = base;
  a.sparse24.b_rows = {0};
  CHECK_THROWS_AS(save_bcsr24(file.path(), a), InvalidArgument);
  a = base;
  a.layout = TileLayout::condensed;  // without b_rows
  CHECK_THROWS_AS(save_bcsr24(file.path(), a), InvalidArgument);
  a = base;  // one list gathered, the other (non-empty) not: the kernels read both lists one way
  a.dense.b_rows = implicit_b_rows(a.dense, a.cols);
  CHECK_THROWS_AS(save_bcsr24(file.path(), a), InvalidArgument);
  a = base;  // a row order that is not a permutation
  a.row_order.assign(std::size_t(a.tile_rows) * 16, -1);
  for (std::int32_t i = 0; i < a.rows; ++i) a.row_order[std::size_t(i)] = 0;
  CHECK_THROWS_AS(save_bcsr24(file.path(), a), InvalidArgument);

  // Precision fields: low parts only (and always) for split, row exponents one per row and only with the flag.
  REQUIRE(base.scaling.per_row);
  a = base;
  a.dense.values_lo = a.dense.values;  // fp16 with low parts
  CHECK_THROWS_AS(save_bcsr24(file.path(), a), InvalidArgument);
  a = base;
  a.precision = Precision::split;  // split without them
  CHECK_THROWS_AS(save_bcsr24(file.path(), a), InvalidArgument);
  a = base;
  a.row_exponent.pop_back();
  CHECK_THROWS_AS(save_bcsr24(file.path(), a), InvalidArgument);
  a = base;
  a.scaling.per_row = false;
  CHECK_THROWS_AS(save_bcsr24(file.path(), a), InvalidArgument);
  a = base;
  a.row_exponent.clear();
  CHECK_THROWS_AS(save_bcsr24(file.path(), a), InvalidArgument);
}

TEST_CASE("tuned choices: version 4 with the section, version 3 without; damage in the section rejected", "[serialize][tuning]") {
  const Bcsr24Matrix a = sample_matrix(20, 40, 6);
  std::vector<B24TunedChoice> choices(2);
  choices[0] = {128, 1, 0, 1, 1, 1, 1, 29.5, "NVIDIA H100 80GB HBM3"};
  choices[1] = {1, 3, 0, 3, 0, 2, 0, -1.0, "NVIDIA A100-SXM4-80GB"};
  TempFile plain("plain"), tuned("tuned"), bad("bad");
  save_bcsr24(plain.path(), a);
  save_bcsr24(tuned.path(), a, choices);
  const std::vector<unsigned char> plain_bytes = read_bytes(plain.path()), bytes = read_bytes(tuned.path());
  std::uint32_t version = 0;
  std::memcpy(&version, plain_bytes.data() + 8, 4);
  CHECK(version == kB24VersionWithoutChoices);  // readable by builds that predate tuned choices
  std::memcpy(&version, bytes.data() + 8, 4);
  CHECK(version == kB24FileVersion);
  // Version 4 is version 3 with the section between the arrays and the CRC.
  REQUIRE(bytes.size() == plain_bytes.size() + 4 + 2 * (4 + 6 + 2 + 8) + choices[0].device.size() +
                              choices[1].device.size());
  CHECK(std::equal(plain_bytes.begin() + 12, plain_bytes.end() - 4, bytes.begin() + 12));

  std::vector<B24TunedChoice> read;
  const Bcsr24Matrix back = load_bcsr24(tuned.path(), &read);
  CHECK(back.sparse24.values == a.sparse24.values);
  REQUIRE(read.size() == 2);
  for (std::size_t i = 0; i < 2; ++i) {
    CHECK(read[i].n == choices[i].n);
    CHECK(read[i].input == choices[i].input);
    CHECK(read[i].output == choices[i].output);
    CHECK(read[i].paths == choices[i].paths);
    CHECK(read[i].split_long_bands == choices[i].split_long_bands);
    CHECK(read[i].tile_pipeline == choices[i].tile_pipeline);
    CHECK(read[i].band_groups == choices[i].band_groups);
    CHECK(read[i].measured_us == choices[i].measured_us);
    CHECK(read[i].device == choices[i].device);
  }
  load_bcsr24(plain.path(), &read);
  CHECK(read.empty());
  CHECK_NOTHROW(load_bcsr24(tuned.path()));  // the choices may be ignored

  // Damage: a code out of range, a name running past the end, a count of 0, bytes after the section; each with a
  // valid checksum, so that the section's own checks are what refuses it (the sizes it describes are checked with
  // the header's, before its content).
  const std::size_t section = plain_bytes.size() - 4;
  auto forged = [&](auto edit) {
    std::vector<unsigned char> b = bytes;
    edit(b);
    fix_checksum(b);
    write_bytes(bad.path(), b, b.size());
  };
  forged([&](std::vector<unsigned char>& b) { b[section + 4 + 4 + 2] = 4; });  // paths code 4
  require_rejected(bad.path(), "tuned-choice section: choice 0 of 2 has paths code 4");
  forged([&](std::vector<unsigned char>& b) { b[section + 4 + 4] = 0; });  // B type automatic
  require_rejected(bad.path(), "B type code 0");
  forged([&](std::vector<unsigned char>& b) {
    const std::uint16_t long_name = 60000;
    std::memcpy(b.data() + section + 4 + 10, &long_name, 2);
  });
  require_rejected(bad.path(), "truncated: the header and its tuned-choice section describe");
  forged([&](std::vector<unsigned char>& b) {
    std::memset(b.data() + section, 0, 4);
    b.erase(b.begin() + std::ptrdiff_t(section + 4), b.end() - 4);
  });
  require_rejected(bad.path(), "no choices");
  forged([&](std::vector<unsigned char>& b) { std::memset(b.data() + section, 0, 4); });  // choices past count 0
  require_rejected(bad.path(), "trailing bytes");
  forged([&](std::vector<unsigned char>& b) { b.insert(b.end() - 4, {1, 2, 3}); });
  require_rejected(bad.path(), "trailing bytes: the header and its tuned-choice section describe");
  forged([&](std::vector<unsigned char>& b) { b.resize(section + 4 + 4); b.resize(b.size() + 4); });
  require_rejected(bad.path(), "truncated");
  // A version-3 file with a section is trailing bytes, as before.
  forged([&](std::vector<unsigned char>& b) {
    const std::uint32_t three = 3;
    std::memcpy(b.data() + 8, &three, 4);
  });
  require_rejected(bad.path(), "trailing bytes");

  // Writing refuses what reading would refuse.
  std::vector<B24TunedChoice> wrong = choices;
  wrong[1].device.clear();
  CHECK_THROWS_AS(save_bcsr24(bad.path(), a, wrong), InvalidArgument);
  wrong = choices;
  wrong[0].tile_pipeline = 0;
  CHECK_THROWS_AS(save_bcsr24(bad.path(), a, wrong), InvalidArgument);
}
