// Exhaustive damage to .b24 files: every single-byte change and every truncation of small files of each
// version (version 4's tuned-choice section included) is refused with a ParseError (line 0) that names the file and
// says what is wrong; and every single-byte change with the checksum forged to match either is refused or loads a
// matrix that passes every check.
// Variants are loaded from memory (detail::load_bcsr24_bytes, the checks load_bcsr24 runs), so thousands of
// them cost no disk traffic.
#include <catch2/catch.hpp>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "b24_fixtures.hpp"
#include "b24_test_files.hpp"
#include "format/convert.hpp"
#include "bcsr24/error.hpp"
#include "format/serialize.hpp"
#include "format/layout_check.hpp"
#include "format/serialize_memory.hpp"
#include "test_support.hpp"

using namespace bcsr24;
namespace fs = std::filesystem;

namespace {

/// What loading the variants gave, and the first few that broke the rule (a test failure lists them).
struct Outcome {
  std::int64_t variants = 0;
  std::int64_t refused = 0;
  std::vector<std::string> broken;
  void note(const std::string& what) {
    if (broken.size() < 20) broken.push_back(what);
  }
};

/// Loads a variant that must be refused, with a message that starts with `name` and contains `expected`
/// (or, when given, `alternative`).
void expect_refused(const std::vector<unsigned char>& bytes, std::size_t size, const std::string& name,
                    const std::string& variant, const char* expected, const char* alternative, Outcome& outcome) {
  ++outcome.variants;
  try {
    detail::load_bcsr24_bytes(bytes.data(), size, name);
    outcome.note(variant + ": loaded");
  } catch (const ParseError& e) {
    const std::string what = e.what();
    const bool named = what.rfind(name + ": ", 0) == 0 && e.file() == name && e.line() == 0;
    const bool says = what.find(expected) != std::string::npos ||
                      (alternative != nullptr && what.find(alternative) != std::string::npos);
    if (named && says) ++outcome.refused;
    else outcome.note(variant + ": unexpected message '" + what + "'");
  } catch (const std::exception& e) {
    outcome.note(variant + ": not a ParseError: " + e.what());
  }
}

/// The three changes tried at every byte: all bits, the lowest bit, and +1 (a carry into other bits).
constexpr int kChanges = 3;
unsigned char changed(unsigned char b, int change) {
  return change == 0 ? static_cast<unsigned char>(b ^ 0xFF)
         : change == 1 ? static_cast<unsigned char>(b ^ 0x01)
                       : static_cast<unsigned char>(b + 1);
}
const char* change_name(int change) { return change == 0 ? "xor 0xFF" : change == 1 ? "xor 0x01" : "+1"; }

/// Every single-byte change of `original` is refused: the magic as not a .b24 file, the version as an
/// unsupported version or damage, everything after it as damage ("checksum mismatch", which the CRC-32 of bytes
/// [8, end - 4) guarantees: it detects every error confined to 32 consecutive bits). Every truncation is
/// refused as truncated.
Outcome damage_everywhere(const std::vector<unsigned char>& original, const std::string& name) {
  Outcome outcome;
  std::vector<unsigned char> bytes = original;
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    for (int change = 0; change < kChanges; ++change) {
      bytes[i] = changed(original[i], change);
      const std::string variant = "byte " + std::to_string(i) + " " + change_name(change);
      if (i < 8) expect_refused(bytes, bytes.size(), name, variant, "not a .b24 file", nullptr, outcome);
      else if (i < 12) expect_refused(bytes, bytes.size(), name, variant, "version", "checksum mismatch", outcome);
      else expect_refused(bytes, bytes.size(), name, variant, "checksum mismatch", nullptr, outcome);
    }
    bytes[i] = original[i];
  }
  for (std::size_t size = 0; size < bytes.size(); ++size)
    expect_refused(bytes, size, name, "cut to " + std::to_string(size) + " bytes", "truncated", nullptr, outcome);
  return outcome;
}

/// Every single-byte change with the checksum forged to match: what a buggy or hostile writer could produce.
/// Each variant is refused with a ParseError naming the file, or loads a matrix that passes the layout
/// checks and decodes (the loader's promise: what it accepts, the rest of the library can use).
Outcome forged_everywhere(const std::vector<unsigned char>& original, const std::string& name,
                          std::int64_t& loaded) {
  Outcome outcome;
  std::vector<unsigned char> bytes = original;
  for (std::size_t i = 8; i + 4 < bytes.size(); ++i) {
    for (int change = 0; change < kChanges; ++change) {
      bytes[i] = changed(original[i], change);
      bcsr24::test::fix_checksum(bytes);
      const std::string variant = "forged byte " + std::to_string(i) + " " + change_name(change);
      ++outcome.variants;
      try {
        const Bcsr24Matrix a = detail::load_bcsr24_bytes(bytes.data(), bytes.size(), name);
        ++loaded;
        if (const std::string problem = detail::layout_problem(a); !problem.empty())
          outcome.note(variant + ": loaded a matrix with a layout problem: " + problem);
        const CsrMatrix csr = stored_matrix_csr(a);
        validate_csr(csr);
        for (const double v : csr.values)
          if (!std::isfinite(v)) outcome.note(variant + ": loaded a non-finite value");
      } catch (const ParseError& e) {
        if (std::string(e.what()).rfind(name + ": ", 0) == 0) ++outcome.refused;
        else outcome.note(variant + ": message does not start with the name: " + e.what());
      } catch (const std::exception& e) {
        outcome.note(variant + ": not a ParseError: " + e.what());
      }
    }
    bytes[i] = original[i];
  }
  return outcome;
}

void require_clean(const Outcome& outcome) {
  std::string list;
  for (const std::string& b : outcome.broken) list += "\n  " + b;
  INFO("first broken variants:" << list);
  REQUIRE(outcome.broken.empty());
}

/// A file made now by the converter and the current writer: both lists, condensed with b_rows and a row map,
/// per-row exponents, split values (so values_lo exists); with `choices`, version 4 with their section.
std::vector<unsigned char> fresh_file(const std::vector<B24TunedChoice>& choices = {}) {
  ConvertOptions options;
  options.layout = TileLayout::condensed;
  options.reorder = Reordering::rcm;
  options.precision = Precision::split;
  options.scaling = ScalingPolicy::per_row;
  const Bcsr24Matrix a = convert_to_bcsr24(bcsr24::test::xdys_matrix(40, 50, 25, 35, 17), options);
  REQUIRE(a.sparse24.tiles() > 0);
  REQUIRE(a.dense.tiles() > 0);
  REQUIRE(a.sparse24.gathered());
  REQUIRE_FALSE(a.row_order.empty());
  REQUIRE(a.scaling.per_row);
  REQUIRE_FALSE(a.dense.values_lo.empty());
  const std::string path = (fs::temp_directory_path() / "bcsr24_damage_fresh.b24").string();
  save_bcsr24(path, a, choices);
  std::vector<unsigned char> bytes = bcsr24::test::read_bytes(path);
  fs::remove(path);
  return bytes;
}

using NamedFile = std::pair<std::string, std::vector<unsigned char>>;

/// The files both damage tests change: every committed fixture and two freshly written files (version 3, and
/// version 4 with tuned choices).
std::vector<NamedFile> damage_inputs() {
  std::vector<NamedFile> files;
  for (const bcsr24::test::B24Fixture& f : bcsr24::test::b24_fixtures())
    files.emplace_back(f.file, bcsr24::test::read_bytes(bcsr24::test::fixture_dir() + "/" + f.file));
  files.emplace_back("fresh_v3_condensed_rcm_split_per_row.b24", fresh_file());
  files.emplace_back("fresh_v4_condensed_rcm_split_per_row_choices.b24",
                     fresh_file(bcsr24::test::fixture_tuned_choices()));
  return files;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

TEST_CASE("every single-byte change and every truncation of a .b24 file is refused", "[serialize][damage]") {
  const std::vector<NamedFile> files = damage_inputs();

  std::int64_t variants = 0, bytes_total = 0;
  const auto start = std::chrono::steady_clock::now();
  for (const auto& [name, bytes] : files) {
    CAPTURE(name, bytes.size());
    // The unchanged file loads: every refusal below is due to the change.
    REQUIRE_NOTHROW(detail::load_bcsr24_bytes(bytes.data(), bytes.size(), name));
    const Outcome outcome = damage_everywhere(bytes, name);
    require_clean(outcome);
    REQUIRE(outcome.variants == std::int64_t(bytes.size()) * (kChanges + 1));
    REQUIRE(outcome.refused == outcome.variants);
    variants += outcome.variants;
    bytes_total += std::int64_t(bytes.size());
  }
  WARN(files.size() << " files, " << bytes_total << " bytes: " << variants << " damaged variants, all refused, in "
                    << seconds_since(start) << " s");
}

TEST_CASE("every single-byte change with a forged checksum is refused or loads a usable matrix",
          "[serialize][damage]") {
  const std::vector<NamedFile> files = damage_inputs();

  std::int64_t variants = 0, loaded = 0;
  const auto start = std::chrono::steady_clock::now();
  for (const auto& [name, bytes] : files) {
    CAPTURE(name);
    const Outcome outcome = forged_everywhere(bytes, name, loaded);
    require_clean(outcome);
    variants += outcome.variants;
  }
  // Changes to values and to header statistics give other valid matrices; changes to structure are refused.
  CHECK(loaded > 0);
  CHECK(loaded < variants);
  WARN(variants << " forged variants: " << variants - loaded << " refused, " << loaded << " loaded and passed the "
                << "layout checks and decoding, in " << seconds_since(start) << " s");
}

TEST_CASE("load_bcsr24 refuses a directory and a device instead of reading them", "[serialize][damage]") {
  const std::string dir = fs::temp_directory_path().string();
  CHECK_THROWS_WITH(load_bcsr24(dir), Catch::StartsWith(dir + ": ") && Catch::Contains("is a directory"));
  CHECK_THROWS_WITH(load_bcsr24("/dev/zero"), Catch::StartsWith("/dev/zero: ") && Catch::Contains("not a regular file"));
  CHECK_THROWS_AS(load_bcsr24(dir), ParseError);
}
