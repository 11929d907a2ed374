// .b24 files: bit-exact round trips, and every kind of damage rejected with FileFormatError naming the file.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "bcsr24/convert.hpp"
#include "bcsr24/error.hpp"
#include "bcsr24/serialize.hpp"
#include "bcsr24/synthetic.hpp"
#include "test_support.hpp"

using namespace bcsr24;
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

std::vector<unsigned char> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_bytes(const std::string& path, const std::vector<unsigned char>& bytes, std::size_t size) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(size));
}

/// CRC-32 (IEEE, as zlib's crc32), bit by bit: lets a test forge a file whose checksum is right but whose
/// content breaks a structural rule.
std::uint32_t crc32_ieee(const unsigned char* data, std::size_t size) {
  std::uint32_t crc = 0xFFFFFFFFu;
  for (std::size_t i = 0; i < size; ++i) {
    crc ^= data[i];
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
  }
  return ~crc;
}

void fix_checksum(std::vector<unsigned char>& bytes) {
  const std::uint32_t crc = crc32_ieee(bytes.data() + 8, bytes.size() - 8 - 4);
  std::memcpy(bytes.data() + bytes.size() - 4, &crc, 4);
}

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
    REQUIRE(x->metadata == y->metadata);
  }
  REQUIRE(a.scaling.exponent == b.scaling.exponent);
  REQUIRE(std::memcmp(&a.scaling.max_abs, &b.scaling.max_abs, sizeof(double)) == 0);
  REQUIRE(std::memcmp(&a.scaling.min_abs_nonzero, &b.scaling.min_abs_nonzero, sizeof(double)) == 0);
  REQUIRE(a.scaling.overflow_count == b.scaling.overflow_count);
  REQUIRE(a.scaling.underflow_count == b.scaling.underflow_count);
  REQUIRE(a.scaling.subnormal_count == b.scaling.subnormal_count);
  REQUIRE(a.scaling.flushed_count == b.scaling.flushed_count);
}

Bcsr24Matrix sample_matrix(std::int32_t rows, std::int32_t cols, std::uint64_t seed, double scale = 1.0) {
  XdYsSpec spec;
  spec.rows = rows;
  spec.cols = cols;
  spec.dense_percent = 20;
  spec.sparse24_percent = 30;
  spec.seed = seed;
  CsrMatrix a = generate_xdys(spec);
  for (double& v : a.values) v *= scale;
  return convert_to_bcsr24(a);
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
  const std::vector<Bcsr24Matrix> samples = {sample_matrix(200, 333, seed), sample_matrix(512, 512, seed + 1),
                                             sample_matrix(37, 45, seed + 2, 1e7),  // scaled
                                             sample_matrix(0, 0, seed), sample_matrix(5, 0, seed),
                                             sample_matrix(1, 1, seed)};
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

TEST_CASE("every flipped byte is detected", "[serialize]") {
  const Bcsr24Matrix a = sample_matrix(20, 40, bcsr24::test::test_seed(5));
  TempFile file("full"), bad("flipped");
  save_bcsr24(file.path(), a);
  const std::vector<unsigned char> bytes = read_bytes(file.path());
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    for (unsigned char mask : {0x01, 0x80, 0xFF}) {
      CAPTURE(i, int(mask));
      std::vector<unsigned char> damaged = bytes;
      damaged[i] ^= mask;
      write_bytes(bad.path(), damaged, damaged.size());
      require_rejected(bad.path());
    }
  }
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
  const Bcsr24Matrix a = convert_to_bcsr24(m);
  REQUIRE(a.sparse24.tiles() == 1);
  REQUIRE(a.dense.tiles() == 1);
  TempFile file("full"), bad("forged");
  save_bcsr24(file.path(), a);
  const std::vector<unsigned char> bytes = read_bytes(file.path());
  // Payload offsets (docs/FORMAT.md): header 136 bytes, then 2:4 row_ptr (2 x 4), col_idx (4), values (512),
  // metadata (64), dense row_ptr (8), col_idx (4), values (1024), CRC (4).
  const std::size_t sparse_row_ptr = 136, sparse_col = sparse_row_ptr + 8, sparse_values = sparse_col + 4,
                    sparse_meta = sparse_values + 512, dense_row_ptr = sparse_meta + 64, dense_col = dense_row_ptr + 8,
                    dense_values = dense_col + 4;
  REQUIRE(bytes.size() == dense_values + 1024 + 4);

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
  CsrMatrix small;
  small.rows = 8;
  small.cols = 20;
  small.row_ptr.assign(9, 1);
  small.row_ptr[0] = 0;
  small.col_idx = {0};
  small.values = {2.0};
  const Bcsr24Matrix edge = convert_to_bcsr24(small);
  TempFile edge_file("edge");
  save_bcsr24(edge_file.path(), edge);
  std::vector<unsigned char> edge_bytes = read_bytes(edge_file.path());
  // Row 15 of the tile lies beyond the matrix's 8 rows; its group 0 names columns (0, 1). Store a 1 there.
  const std::size_t values_at = 136 + 8 + 4;
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
