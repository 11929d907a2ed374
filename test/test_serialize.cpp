// .b24 files: bit-exact round trips, and every kind of damage rejected with a ParseError (line 0) naming the file; the
// tuned-choice section of version 4. The fields versions 2 and 3 added, and reading versions 1 and 2:
// test_b24_versions.cpp.
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

ConvertOptions with_precision(Precision precision, ScalingPolicy scaling = ScalingPolicy::per_row) {
  ConvertOptions options;
  options.precision = precision;
  options.scaling = scaling;
  return options;
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
  bcsr24::test::check_same_tuned_choices(read, choices);
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
  forged([&](std::vector<unsigned char>& b) { b[section + 4 + 4 + 2] = 6; });  // paths code 6 (5 is hybrid_vectors)
  require_rejected(bad.path(), "tuned-choice section: choice 0 of 2 has paths code 6");
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
