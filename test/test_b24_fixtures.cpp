// The legacy and current .b24 readers against committed fixture files (test/fixtures/b24): each file loads to
// the matrix of the Matrix Market file it was made from, value for value. Also the generator that made them,
// kept as a hidden test case (run by hand only, see test/fixtures/b24/README.md).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "b24_fixtures.hpp"
#include "b24_test_files.hpp"
#include "format/convert.hpp"
#include "bcsr24/error.hpp"
#include "bcsr24/matrix_market.hpp"
#include "format/serialize.hpp"

using namespace bcsr24;
namespace fs = std::filesystem;

namespace bcsr24::test {

std::string fixture_dir() { return std::string(BCSR24_TEST_FIXTURE_DIR) + "/b24"; }

const std::vector<B24Fixture>& b24_fixtures() {
  static const std::vector<B24Fixture> fixtures = {
      {"v1_aligned_fp16.b24", "m1_large.mtx", 1, TileLayout::aligned, Reordering::none, Precision::fp16, false},
      {"v2_aligned_fp16.b24", "m1.mtx", 2, TileLayout::aligned, Reordering::none, Precision::fp16, false},
      {"v2_condensed_rcm_fp16.b24", "m2.mtx", 2, TileLayout::condensed, Reordering::rcm, Precision::fp16, false},
      {"v3_aligned_fp16.b24", "m1.mtx", 3, TileLayout::aligned, Reordering::none, Precision::fp16, false},
      {"v3_aligned_bf16_per_row.b24", "m1_row_scaled.mtx", 3, TileLayout::aligned, Reordering::none, Precision::bf16,
       true},
      {"v3_condensed_rcm_split_per_row.b24", "m2_fine.mtx", 3, TileLayout::condensed, Reordering::rcm,
       Precision::split, true},
      {"v4_condensed_rcm_fp16_choices.b24", "m2.mtx", 4, TileLayout::condensed, Reordering::rcm, Precision::fp16,
       false, true},
  };
  return fixtures;
}

const std::vector<B24TunedChoice>& fixture_tuned_choices() {
  // Fields: n, B type, output type, paths, split_long_bands, tile_pipeline, band_groups, measured_us, device.
  static const std::vector<B24TunedChoice> choices{
      // n = 8, fp16 B, fp32 C: hybrid, long bands split, standard pipeline.
      {8, 1, 0, 3, 1, 1, 0, 12.5, "NVIDIA H100 80GB HBM3"},
      // n = 130, fp32 B, fp32 C: tiles only, bands whole, deep pipeline, not timed.
      {130, 3, 0, 1, 0, 2, 0, -1.0, "NVIDIA H200"}};
  return choices;
}

}  // namespace bcsr24::test

namespace {

using bcsr24::test::B24Fixture;
using bcsr24::test::b24_fixtures;
using bcsr24::test::fixture_dir;

std::string in_fixtures(const std::string& name) { return fixture_dir() + "/" + name; }

/// Exactly equal: same shape, same pattern, bit-identical values.
void require_same_csr(const CsrMatrix& got, const CsrMatrix& expected) {
  REQUIRE(got.rows == expected.rows);
  REQUIRE(got.cols == expected.cols);
  REQUIRE(got.row_ptr == expected.row_ptr);
  REQUIRE(got.col_idx == expected.col_idx);
  REQUIRE(got.values.size() == expected.values.size());
  for (std::size_t k = 0; k < got.values.size(); ++k)
    if (std::memcmp(&got.values[k], &expected.values[k], sizeof(double)) != 0)
      FAIL("value " << k << " is " << got.values[k] << ", expected " << expected.values[k]);
}

// ---- the generator's matrices ----------------------------------------------------------------------------

enum class Values {
  coarse,  ///< +-k/4, k in 1..16: exact in fp16 and bf16
  fine,    ///< +-(1 + m 2^-19), m < 2^19: 20 significant bits, exact only as split (hi + lo)
};

/// A random pattern (about one entry in 12) in which row 5 of every other band is full: more nonzeros than any
/// arrangement of its band's columns into 2:4 tiles can hold, so both tile lists are non-empty in either layout. Rows r are scaled by 2^(4 ((5 r) % 9 - 4)) (2^-16 .. 2^16)
/// when row_scaled: only per-row exponents store that exactly. mt19937_64 and integer arithmetic only, so the
/// matrix does not depend on the standard library's distributions.
CsrMatrix fixture_csr(std::int32_t rows, std::int32_t cols, std::uint64_t seed, Values values, bool row_scaled) {
  std::mt19937_64 rng(seed);
  const auto value = [&](std::int32_t r) {
    const std::uint64_t bits = rng();
    double v = values == Values::coarse ? double(1 + (bits >> 40) % 16) / 4.0
                                        : 1.0 + double((bits >> 20) % (std::uint64_t{1} << 19)) / double(1 << 19);
    if (bits & 1) v = -v;
    return row_scaled ? std::ldexp(v, 4 * ((5 * r) % 9 - 4)) : v;
  };
  CsrMatrix a;
  a.rows = rows;
  a.cols = cols;
  a.row_ptr.assign(1, 0);
  for (std::int32_t r = 0; r < rows; ++r) {
    for (std::int32_t c = 0; c < cols; ++c) {
      const bool planted = (r / 16) % 2 == 0 && r % 16 == 5;  // a full row: more than 2:4 can hold
      if (planted || rng() % 12 == 0) {
        a.col_idx.push_back(c);
        a.values.push_back(value(r));
      }
    }
    a.row_ptr.push_back(std::int32_t(a.col_idx.size()));
  }
  return a;
}

/// The conversion a fixture was made with: its layout, reordering and precision; per-row or matrix-wide
/// exponents.
ConvertOptions fixture_options(const B24Fixture& f) {
  ConvertOptions options;
  options.layout = f.layout;
  options.reorder = f.reordering;
  options.precision = f.precision;
  options.scaling = f.per_row ? ScalingPolicy::per_row : ScalingPolicy::automatic;
  options.threads = 1;
  return options;
}

void require_both_lists(const Bcsr24Matrix& a) {
  REQUIRE(a.sparse24.tiles() > 0);
  REQUIRE(a.dense.tiles() > 0);
}

}  // namespace

TEST_CASE("committed .b24 fixtures of every version load to their matrices", "[serialize][fixtures]") {
  std::set<std::uint32_t> versions;
  for (const B24Fixture& f : b24_fixtures()) {
    CAPTURE(f.file, f.matrix);
    const std::string path = in_fixtures(f.file);
    const std::vector<unsigned char> bytes = bcsr24::test::read_bytes(path);
    REQUIRE(bytes.size() > 12);
    std::uint32_t version = 0;
    std::memcpy(&version, bytes.data() + 8, 4);
    REQUIRE(version == f.version);
    versions.insert(version);

    std::vector<B24TunedChoice> choices;
    const Bcsr24Matrix a = load_bcsr24(path, &choices);
    CHECK(a.layout == f.layout);
    CHECK(a.reordering == f.reordering);
    CHECK(a.precision == f.precision);
    CHECK(a.scaling.per_row == f.per_row);
    CHECK(a.row_exponent.size() == (f.per_row ? std::size_t(a.rows) : 0));
    CHECK(a.row_order.empty() == (f.reordering == Reordering::none));
    CHECK(a.gathered() == (f.layout == TileLayout::condensed));
    CHECK(a.sparse24.values_lo.size() == (f.precision == Precision::split ? a.sparse24.values.size() : 0));
    require_both_lists(a);
    if (version < 3) {  // the census's storage errors were added in version 3
      CHECK(a.scaling.max_flushed_relative == 0.0);
      CHECK(a.scaling.max_relative_error == 0.0);
      CHECK(a.scaling.frobenius_relative_error == 0.0);
    }
    if (f.file == "v1_aligned_fp16.b24") CHECK(a.scaling.exponent > 0);  // its values overflow fp16 unscaled
    // The tuned choices, field for field (version 4 only).
    const std::vector<B24TunedChoice> no_choices;
    const std::vector<B24TunedChoice>& expected = f.tuned_choices ? bcsr24::test::fixture_tuned_choices() : no_choices;
    bcsr24::test::check_same_tuned_choices(choices, expected);

    // The matrix it holds is the one it was made from, exactly (the values were chosen to be representable).
    require_same_csr(stored_matrix_csr(a), read_matrix_market(in_fixtures(f.matrix)));

    // Saving writes version 3, or 4 with the choices: the same bytes for a fixture of those versions (the writer
    // has not drifted), a file that loads to the same matrix for older ones.
    const std::string copy = (fs::temp_directory_path() / ("bcsr24_fixture_copy_" + f.file)).string();
    save_bcsr24(copy, a, choices);
    const std::vector<unsigned char> saved = bcsr24::test::read_bytes(copy);
    if (version >= kB24VersionWithoutChoices) CHECK(saved == bytes);
    require_same_csr(stored_matrix_csr(load_bcsr24(copy)), stored_matrix_csr(a));
    fs::remove(copy);
  }
  // A fixture for every version the reader claims to read.
  for (std::uint32_t v = kB24OldestFileVersion; v <= kB24FileVersion; ++v) CHECK(versions.count(v) == 1);

  // Every committed .b24 file is in the table (none is left untested).
  for (const auto& entry : fs::directory_iterator(fixture_dir())) {
    if (entry.path().extension() != ".b24") continue;
    const std::string name = entry.path().filename().string();
    CAPTURE(name);
    bool listed = false;
    for (const B24Fixture& f : b24_fixtures()) listed = listed || f.file == name;
    CHECK(listed);
  }
}

// Writes the fixtures into $BCSR24_FIXTURE_OUT. Hidden ("[.]"): run it by hand, once per new fixture; never to
// change a committed file, which would break the contract the fixtures stand for.
TEST_CASE("write the .b24 fixtures", "[.][b24-fixture-generator]") {
  const char* out = std::getenv("BCSR24_FIXTURE_OUT");
  REQUIRE(out != nullptr);
  const fs::path dir(out);
  fs::create_directories(dir);

  CsrMatrix m1 = fixture_csr(37, 70, 1, Values::coarse, false);  // edge tiles in both directions
  CsrMatrix m1_large = m1;
  for (double& v : m1_large.values) v = std::ldexp(v, 20);  // beyond fp16: a matrix-wide exponent
  const std::vector<std::pair<std::string, CsrMatrix>> matrices = {
      {"m1.mtx", m1},
      {"m1_large.mtx", m1_large},
      {"m1_row_scaled.mtx", fixture_csr(37, 70, 1, Values::coarse, true)},
      {"m2.mtx", fixture_csr(45, 45, 2, Values::coarse, false)},
      {"m2_fine.mtx", fixture_csr(45, 45, 2, Values::fine, true)}};
  for (const auto& [name, csr] : matrices) write_matrix_market((dir / name).string(), csr);

  for (const B24Fixture& f : b24_fixtures()) {
    CAPTURE(f.file);
    // From the written Matrix Market file, so the fixture is exactly what the test compares it with.
    const CsrMatrix csr = read_matrix_market((dir / f.matrix).string());
    const Bcsr24Matrix a = convert_to_bcsr24(csr, fixture_options(f));
    require_both_lists(a);
    REQUIRE(a.layout == f.layout);
    REQUIRE(a.reordering == f.reordering);
    require_same_csr(stored_matrix_csr(a), csr);
    const std::string path = (dir / f.file).string();
    if (f.version == 1) bcsr24::test::write_bytes(path, bcsr24::test::v1_bytes(a));
    else if (f.version == 2) bcsr24::test::write_bytes(path, bcsr24::test::v2_bytes(a));
    else save_bcsr24(path, a, f.tuned_choices ? bcsr24::test::fixture_tuned_choices() : std::vector<B24TunedChoice>{});
  }
}
