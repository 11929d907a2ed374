// Tests of the Matrix Market reader and writer on small hand-written files: every feature and every error.
#include <catch2/catch.hpp>

#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "bcsr24/csr_matrix.hpp"
#include "bcsr24/error.hpp"
#include "bcsr24/matrix_market.hpp"

namespace fs = std::filesystem;
using bcsr24::CsrMatrix;
using bcsr24::MatrixMarketInfo;
using bcsr24::MatrixMarketOptions;
using Entry = std::tuple<std::int32_t, std::int32_t, double>;

namespace {

/// A fresh directory under the system temp dir, removed at scope exit.
class TempDir {
 public:
  TempDir() {
    std::random_device rd;
    path_ = fs::temp_directory_path() / ("bcsr24_mm_test_" + std::to_string(rd()) + std::to_string(rd()));
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  std::string write(const std::string& name, const std::string& bytes) const {
    const std::string p = (path_ / name).string();
    std::ofstream(p, std::ios::binary) << bytes;
    return p;
  }
  std::string path(const std::string& name) const { return (path_ / name).string(); }

 private:
  fs::path path_;
};

const std::string kName = "t.mtx";

CsrMatrix read(const std::string& text, const MatrixMarketOptions& options = {}, MatrixMarketInfo* info = nullptr) {
  return bcsr24::read_matrix_market_from_memory(text.data(), text.size(), kName, options, info);
}

/// Stored entries (0-based) in CSR order.
std::vector<Entry> entries(const CsrMatrix& a) {
  std::vector<Entry> out;
  for (std::int32_t r = 0; r < a.rows; ++r)
    for (std::int32_t p = a.row_ptr[static_cast<std::size_t>(r)]; p < a.row_ptr[static_cast<std::size_t>(r) + 1]; ++p)
      out.emplace_back(r, a.col_idx[static_cast<std::size_t>(p)], a.values[static_cast<std::size_t>(p)]);
  return out;
}

/// Reads `text` expecting an exception of type E (`expected` says which, should none come); `check` examines it.
template <class E, class Check>
void expect_error(const std::string& text, const std::string& expected, Check&& check) {
  INFO("input:\n" << text);
  try {
    read(text);
    FAIL("no exception; expected a " << expected);
  } catch (const E& e) {
    check(e);
  }
}

/// Expects a ParseError at `line` (0: "file: problem", no line in the message) whose problem contains `fragment`.
void expect_parse_error(const std::string& text, std::int64_t line, const std::string& fragment) {
  expect_error<bcsr24::ParseError>(text, "ParseError containing: " + fragment, [&](const bcsr24::ParseError& e) {
    CHECK(e.file() == kName);
    CHECK(e.line() == line);
    CHECK_THAT(e.problem(), Catch::Contains(fragment));
    CHECK(std::string(e.what()) == kName + (line > 0 ? ":" + std::to_string(line) : "") + ": " + e.problem());
  });
}

void expect_size_limit(const std::string& text, std::int64_t line, const std::string& fragment) {
  expect_error<bcsr24::SizeLimitError>(text, "SizeLimitError containing: " + fragment,
                                       [&](const bcsr24::SizeLimitError& e) {
                                         CHECK_THAT(std::string(e.what()),
                                                    Catch::StartsWith(kName + ":" + std::to_string(line) + ": "));
                                         CHECK_THAT(std::string(e.what()), Catch::Contains(fragment));
                                       });
}

std::string gzip_bytes(const std::string& text) {
  z_stream zs{};
  REQUIRE(deflateInit2(&zs, Z_BEST_COMPRESSION, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) == Z_OK);
  std::string out(deflateBound(&zs, static_cast<uLong>(text.size())) + 64, '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  zs.avail_in = static_cast<uInt>(text.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  REQUIRE(deflate(&zs, Z_FINISH) == Z_STREAM_END);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

const std::string kGeneral = "%%MatrixMarket matrix coordinate real general\n";
const std::string kSymmetric = "%%MatrixMarket matrix coordinate real symmetric\n";
const std::string kArrayGeneral = "%%MatrixMarket matrix array real general\n";
const std::string kArraySymmetric = "%%MatrixMarket matrix array real symmetric\n";

}  // namespace

// ---------------------------------------------------------------------------------------------------------
// Valid files

TEST_CASE("coordinate real general: exact values, unsorted input, info", "[mm]") {
  MatrixMarketInfo info;
  const CsrMatrix a = read(kGeneral + "% comment\n3 4 4\n3 4 -2.5e-3\n1 1 1.0\n2 3 7\n1 4 1e2\n", {}, &info);
  CHECK(a.rows == 3);
  CHECK(a.cols == 4);
  CHECK(entries(a) == std::vector<Entry>{{0, 0, 1.0}, {0, 3, 100.0}, {1, 2, 7.0}, {2, 3, -2.5e-3}});
  CHECK(info.format == "coordinate");
  CHECK(info.field == "real");
  CHECK(info.symmetry == "general");
  CHECK(info.rows == 3);
  CHECK(info.cols == 4);
  CHECK(info.entries == 4);
}

TEST_CASE("number forms: 12., .5, +1, 1E0, -0, tabs and spaces, exact round trip", "[mm]") {
  const CsrMatrix a = read(kGeneral + "2 4 7\n1 1 12.\n1 2\t.5\n  1   3   +1\n1 4 1E0\n2 1 -0\n2 2 0.1\n2 3 4.9e-324\n");
  const auto e = entries(a);
  REQUIRE(e.size() == 7);
  CHECK(std::get<2>(e[0]) == 12.0);
  CHECK(std::get<2>(e[1]) == 0.5);
  CHECK(std::get<2>(e[2]) == 1.0);
  CHECK(std::get<2>(e[3]) == 1.0);
  CHECK(std::get<2>(e[4]) == 0.0);       // explicit zero: kept
  CHECK(std::get<2>(e[5]) == 0.1);       // correctly rounded, as from_chars guarantees
  CHECK(std::get<2>(e[6]) == 4.9e-324);  // smallest subnormal
}

TEST_CASE("underflow reads as zero, overflow and non-finite values are refused", "[mm]") {
  const CsrMatrix a = read(kGeneral + "1 2 2\n1 1 1e-400\n1 2 -1e-999999999999\n");
  CHECK(entries(a) == std::vector<Entry>{{0, 0, 0.0}, {0, 1, 0.0}});
  CHECK(std::signbit(a.values[1]));
  expect_parse_error(kGeneral + "1 1 1\n1 1 1e310\n", 3, "value '1e310' is beyond the double range");
  expect_parse_error(kGeneral + "1 1 1\n1 1 -1.5E9999\n", 3, "beyond the double range");
  expect_parse_error(kGeneral + "1 1 1\n1 1 inf\n", 3, "not finite");
  expect_parse_error(kGeneral + "1 1 1\n1 1 nan\n", 3, "not finite");
  // Finite values whose duplicate sum overflows: no single line is at fault (line 0).
  expect_parse_error(kGeneral + "2 2 3\n1 1 1\n2 1 1.5e308\n2 1 1.5e308\n", 0,
                     "the duplicate entries at (2, 1) sum beyond the double range");
}

TEST_CASE("integer field: integer syntax only, huge values parsed as double", "[mm]") {
  const CsrMatrix a = read("%%MatrixMarket matrix coordinate integer general\n2 2 3\n1 1 -7\n2 2 "
                           "19223372036854775808\n1 2 +9223372036854775807\n");
  CHECK(entries(a) == std::vector<Entry>{{0, 0, -7.0}, {0, 1, 9223372036854775807.0}, {1, 1, 19223372036854775808.0}});
  expect_parse_error("%%MatrixMarket matrix coordinate integer general\n1 1 1\n1 1 1.5\n", 3,
                     "expected a numeric value, found '1.5'");
  expect_parse_error("%%MatrixMarket matrix coordinate integer general\n1 1 1\n1 1 1e3\n", 3, "'1e3'");
}

TEST_CASE("'double' is an alias of real and 'unsigned-integer' reads like integer", "[mm]") {
  MatrixMarketInfo info;
  CHECK(entries(read("%%MatrixMarket matrix coordinate double general\n1 1 1\n1 1 2.5\n", {}, &info)) ==
        std::vector<Entry>{{0, 0, 2.5}});
  CHECK(info.field == "double");
  CHECK(entries(read("%%MatrixMarket matrix array unsigned-integer general\n1 2\n3\n4\n", {}, &info)) ==
        std::vector<Entry>{{0, 0, 3.0}, {0, 1, 4.0}});
  CHECK(info.field == "integer");
}

TEST_CASE("header keywords are case-insensitive", "[mm]") {
  const CsrMatrix a = read("%%matrixmarket MATRIX Coordinate REAL Symmetric\n2 2 1\n2 1 3\n");
  CHECK(entries(a) == std::vector<Entry>{{0, 1, 3.0}, {1, 0, 3.0}});
}

TEST_CASE("pattern: ones by default, seeded uniform [-1,1) values on request", "[mm]") {
  const std::string text = "%%MatrixMarket matrix coordinate pattern symmetric\n4 4 4\n1 1\n2 1\n3 2\n4 4\n";
  MatrixMarketInfo info;
  const CsrMatrix ones = read(text, {}, &info);
  CHECK(info.field == "pattern");
  CHECK(entries(ones) == std::vector<Entry>{{0, 0, 1.0}, {0, 1, 1.0}, {1, 0, 1.0}, {1, 2, 1.0}, {2, 1, 1.0}, {3, 3, 1.0}});

  MatrixMarketOptions random;
  random.pattern_values = bcsr24::MatrixMarketOptions::PatternValues::random;
  random.seed = 42;
  const CsrMatrix r1 = read(text, random);
  const CsrMatrix r2 = read(text, random);
  CHECK(r1.values == r2.values);  // reproducible from the seed
  CHECK(r1.col_idx == ones.col_idx);
  for (double v : r1.values) {
    CHECK(v >= -1.0);
    CHECK(v < 1.0);
  }
  // The mirrored entry carries the same value: the matrix stays symmetric.
  const auto e = entries(r1);
  CHECK(std::get<2>(e[1]) == std::get<2>(e[2]));  // (0,1) == (1,0)
  CHECK(std::get<2>(e[3]) == std::get<2>(e[4]));  // (1,2) == (2,1)
  random.seed = 43;
  CHECK(read(text, random).values != r1.values);
}

TEST_CASE("random pattern values are spread over [-1, 1)", "[mm]") {
  std::string text = "%%MatrixMarket matrix coordinate pattern general\n1000 1 1000\n";
  for (int i = 1; i <= 1000; ++i) text += std::to_string(i) + " 1\n";
  MatrixMarketOptions random;
  random.pattern_values = bcsr24::MatrixMarketOptions::PatternValues::random;
  const CsrMatrix a = read(text, random);
  double sum = 0.0, lo = 1.0, hi = -1.0;
  for (double v : a.values) {
    sum += v;
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  CHECK(std::abs(sum / 1000.0) < 0.1);  // mean 0, standard error ~0.018
  CHECK(lo < -0.9);
  CHECK(hi > 0.9);
}

TEST_CASE("symmetric, skew-symmetric and real hermitian coordinate files are expanded", "[mm]") {
  const std::string body = "3 3 3\n1 1 4\n3 1 10\n3 2 20\n";
  CHECK(entries(read(kSymmetric + body)) ==
        std::vector<Entry>{{0, 0, 4.0}, {0, 2, 10.0}, {1, 2, 20.0}, {2, 0, 10.0}, {2, 1, 20.0}});
  CHECK(entries(read("%%MatrixMarket matrix coordinate real hermitian\n" + body)) ==
        entries(read(kSymmetric + body)));
  CHECK(entries(read("%%MatrixMarket matrix coordinate real skew-symmetric\n3 3 2\n3 1 10\n3 2 20\n")) ==
        std::vector<Entry>{{0, 2, -10.0}, {1, 2, -20.0}, {2, 0, 10.0}, {2, 1, 20.0}});
  CHECK(entries(read("%%MatrixMarket matrix coordinate integer hermitian\n2 2 2\n1 1 1\n2 1 5\n")) ==
        std::vector<Entry>{{0, 0, 1.0}, {0, 1, 5.0}, {1, 0, 5.0}});
}

TEST_CASE("symmetric files that store the upper triangle are mirrored the same way", "[mm]") {
  CHECK(entries(read(kSymmetric + "3 3 3\n1 3 10\n2 3 20\n3 3 1\n")) ==
        std::vector<Entry>{{0, 2, 10.0}, {1, 2, 20.0}, {2, 0, 10.0}, {2, 1, 20.0}, {2, 2, 1.0}});
  CHECK(entries(read("%%MatrixMarket matrix coordinate real skew-symmetric\n2 2 1\n1 2 3\n")) ==
        std::vector<Entry>{{0, 1, 3.0}, {1, 0, -3.0}});
}

TEST_CASE("duplicates are summed (also across the mirror) and explicit zeros kept", "[mm]") {
  CHECK(entries(read(kGeneral + "2 2 4\n1 1 1\n2 2 0\n1 1 2.5\n1 1 -0.5\n")) == std::vector<Entry>{{0, 0, 3.0}, {1, 1, 0.0}});
  CHECK(entries(read(kSymmetric + "2 2 2\n2 1 1\n2 1 2\n")) ==
        std::vector<Entry>{{0, 1, 3.0}, {1, 0, 3.0}});
}

TEST_CASE("comments and blank lines are accepted wherever lines may appear", "[mm]") {
  const std::string text =
      "  %%MatrixMarket matrix coordinate real general  \n"
      "%%GraphBLAS type double\n"
      "\n"
      "   \t\n"
      "% comment\n"
      "  % indented comment\n"
      "2 2 2   \n"
      "\n"
      "% comment between entries\n"
      "  1 1 1.5\t\n"
      "\n"
      "2 2 2.5";  // no final newline
  CHECK(entries(read(text)) == std::vector<Entry>{{0, 0, 1.5}, {1, 1, 2.5}});
  // A UTF-8 byte-order mark before the banner is tolerated.
  CHECK(entries(read("\xEF\xBB\xBF" + kGeneral + "1 1 1\n1 1 9\n")) == std::vector<Entry>{{0, 0, 9.0}});
}

TEST_CASE("empty matrices", "[mm]") {
  const CsrMatrix a = read(kSymmetric + "10 10 0\n");
  CHECK(a.rows == 10);
  CHECK(a.nnz() == 0);
  CHECK(a.row_ptr.size() == 11);
  CHECK(read(kGeneral + "0 0 0").rows == 0);
  CHECK(read(kArrayGeneral + "0 3\n").nnz() == 0);
}

TEST_CASE("CRLF and CR-only line endings read like LF, with the same line numbers", "[mm]") {
  const std::string lf = kGeneral + "% c\n\n3 3 3\n1 1 1\n2 2 2\n3 3 3\n";
  std::string crlf, cr;
  for (char c : lf) {
    crlf += c == '\n' ? std::string("\r\n") : std::string(1, c);
    cr += c == '\n' ? '\r' : c;
  }
  CHECK(entries(read(crlf)) == entries(read(lf)));
  CHECK(entries(read(cr)) == entries(read(lf)));
  // Line 6 holds the second entry in all three encodings.
  for (const std::string eol : {"\n", "\r\n", "\r"}) {
    const std::string bad = "%%MatrixMarket matrix coordinate real general" + eol + "% c" + eol + eol + "3 3 3" + eol +
                            "1 1 1" + eol + "2 2 x" + eol + "3 3 3" + eol;
    expect_parse_error(bad, 6, "expected a numeric value, found 'x'");
  }
}

TEST_CASE("array format: column-major general, packed symmetric and skew-symmetric", "[mm]") {
  MatrixMarketInfo info;
  const CsrMatrix g = read(kArrayGeneral + "%\n3 2\n1\n2\n3\n4\n5\n0\n", {}, &info);
  CHECK(info.format == "array");
  CHECK(info.entries == 6);
  // Column-major: the first column is 1 2 3. The 0 is listed, so it is stored.
  CHECK(entries(g) == std::vector<Entry>{{0, 0, 1.0}, {0, 1, 4.0}, {1, 0, 2.0}, {1, 1, 5.0}, {2, 0, 3.0}, {2, 1, 0.0}});

  // Lower triangle by columns: (1,1) (2,1) (3,1) (2,2) (3,2) (3,3).
  const CsrMatrix s = read(kArraySymmetric + "3 3\n1\n2\n3\n4\n5\n6\n", {}, &info);
  CHECK(info.entries == 6);
  CHECK(entries(s) == std::vector<Entry>{{0, 0, 1.0}, {0, 1, 2.0}, {0, 2, 3.0}, {1, 0, 2.0}, {1, 1, 4.0}, {1, 2, 5.0},
                                         {2, 0, 3.0}, {2, 1, 5.0}, {2, 2, 6.0}});
  // Strictly lower triangle: (2,1) (3,1) (3,2); the diagonal is stored as explicit zeros.
  const CsrMatrix k = read("%%MatrixMarket matrix array integer skew-symmetric\n3 3\n1\n2\n3\n", {}, &info);
  CHECK(info.entries == 3);
  CHECK(entries(k) == std::vector<Entry>{{0, 0, 0.0}, {0, 1, -1.0}, {0, 2, -2.0}, {1, 0, 1.0}, {1, 1, 0.0}, {1, 2, -3.0},
                                         {2, 0, 2.0}, {2, 1, 3.0}, {2, 2, 0.0}});
}

TEST_CASE("gzip content is detected by magic bytes and inflated", "[mm][gzip]") {
  TempDir dir;
  const std::string text = kGeneral + "2 2 2\n1 1 1.5\n2 2 -2\n";
  const auto expected = entries(read(text));
  CHECK(entries(bcsr24::read_matrix_market(dir.write("a.mtx.gz", gzip_bytes(text)))) == expected);
  // Named .mtx but gzip inside: still read.
  CHECK(entries(bcsr24::read_matrix_market(dir.write("disguised.mtx", gzip_bytes(text)))) == expected);
  // Concatenated members form one valid gzip file.
  const std::string two = gzip_bytes(kGeneral + "2 2 2\n1 1 1.5\n") + gzip_bytes("2 2 -2\n");
  CHECK(entries(bcsr24::read_matrix_market(dir.write("two.mtx.gz", two))) == expected);
  // From memory too.
  const std::string gz = gzip_bytes(text);
  CHECK(entries(bcsr24::read_matrix_market_from_memory(gz.data(), gz.size(), "m.gz")) == expected);
  // Errors in gzip content carry the right line numbers.
  const std::string bad = gzip_bytes(kGeneral + "2 2 2\n1 1 1\n2 9 1\n");
  try {
    bcsr24::read_matrix_market(dir.write("bad.mtx.gz", bad));
    FAIL("no exception");
  } catch (const bcsr24::ParseError& e) {
    CHECK(e.line() == 4);
    CHECK_THAT(e.problem(), Catch::Contains("column index '9'"));
  }
}

TEST_CASE("corrupt or truncated gzip, bzip2 and unreadable files are ParseErrors", "[mm][gzip]") {
  TempDir dir;
  const std::string gz = gzip_bytes(kGeneral + "2 2 2\n1 1 1.5\n2 2 -2\n");
  CHECK_THROWS_WITH(bcsr24::read_matrix_market(dir.write("trunc.gz", gz.substr(0, gz.size() - 12))),
                    Catch::Contains("truncated gzip stream"));
  std::string corrupt = gz;
  corrupt[12] = static_cast<char>(corrupt[12] ^ 0x5a);
  corrupt[20] = static_cast<char>(corrupt[20] ^ 0x5a);
  CHECK_THROWS_AS(bcsr24::read_matrix_market(dir.write("corrupt.gz", corrupt)), bcsr24::ParseError);
  CHECK_THROWS_WITH(bcsr24::read_matrix_market(dir.write("junk.gz", gz + "junk")),
                    Catch::Contains("unexpected data after the end of the gzip stream"));
  CHECK_THROWS_AS(bcsr24::read_matrix_market(dir.write("x.mtx.bz2", "BZh91AY&SY")), bcsr24::ParseError);
  CHECK_THROWS_WITH(bcsr24::read_matrix_market(dir.write("x.mtx.bz2", "BZh91AY&SY")),
                    Catch::Contains("bzip2-compressed input is not supported"));
  try {
    bcsr24::read_matrix_market(dir.path("missing.mtx"));
    FAIL("no exception");
  } catch (const bcsr24::ParseError& e) {
    CHECK(e.line() == 0);
    CHECK(e.file() == dir.path("missing.mtx"));
    CHECK_THAT(e.problem(), Catch::Contains("cannot open file"));
  }
  CHECK_THROWS_WITH(bcsr24::read_matrix_market(dir.path("")), Catch::Contains("directory"));
}

TEST_CASE("complex and vector files are refused as unsupported", "[mm]") {
  try {
    read("%%MatrixMarket matrix coordinate complex general\n1 1 1\n1 1 1 0\n");
    FAIL("no exception");
  } catch (const bcsr24::ParseError& e) {
    CHECK(e.line() == 1);
    CHECK(e.problem() == "complex matrices are not supported");
  }
  CHECK_THROWS_WITH(read("%%MatrixMarket matrix array complex hermitian\n1 1\n1 0\n"), Catch::Contains("complex"));
  CHECK_THROWS_AS(read("%%MatrixMarket vector coordinate real general\n4 1\n1 1\n"), bcsr24::ParseError);
  CHECK_THROWS_WITH(read("%%MatrixMarket vector array real general\n1\n1\n"), Catch::Contains("vector files are not supported"));
}

// ---------------------------------------------------------------------------------------------------------
// Errors, each with its line

TEST_CASE("banner errors", "[mm][errors]") {
  expect_parse_error("", 1, "empty input");
  expect_parse_error("   \n", 1, "bad banner");
  expect_parse_error("3 3 0\n", 1, "bad banner: the first line must start with '%%MatrixMarket', found '3'");
  expect_parse_error("%MatrixMarket matrix coordinate real general\n1 1 0\n", 1, "found '%MatrixMarket'");
  expect_parse_error("%%MatrixMarketmatrix coordinate real general\n1 1 0\n", 1, "bad banner");
  expect_parse_error("%%MatrixMarket matrix coordinate real\n1 1 0\n", 1, "incomplete banner");
  expect_parse_error("%%MatrixMarket matrix coordinate real general extra\n1 1 0\n", 1, "unexpected 'extra'");
  expect_parse_error("%%MatrixMarket tensor coordinate real general\n1 1 0\n", 1, "unknown object 'tensor'");
  expect_parse_error("%%MatrixMarket matrix sparse real general\n1 1 0\n", 1, "unknown format 'sparse'");
  expect_parse_error("%%MatrixMarket matrix coordinate float general\n1 1 0\n", 1, "unknown field 'float'");
  expect_parse_error("%%MatrixMarket matrix coordinate real lower\n1 1 0\n", 1, "unknown symmetry 'lower'");
  expect_parse_error("%%MatrixMarket matrix array pattern general\n1 1\n", 1, "only valid with the 'coordinate' format");
  expect_parse_error("%%MatrixMarket matrix coordinate pattern skew-symmetric\n1 1 0\n", 1, "can only be 'general' or 'symmetric'");
  expect_parse_error("%%MatrixMarket matrix coordinate pattern hermitian\n1 1 0\n", 1, "can only be 'general' or 'symmetric'");
  expect_parse_error("\x01\x02\xff binary\n", 1, "found '\\x01\\x02\\xff'");
}

TEST_CASE("size line errors", "[mm][errors]") {
  expect_parse_error(kGeneral, 1, "missing size line");
  expect_parse_error(kGeneral + "% only comments\n\n", 3, "missing size line");
  expect_parse_error(kGeneral + "%c\n3 3\n", 3, "size line is missing the number of entries");
  expect_parse_error(kGeneral + "3 x 3\n", 2, "expected an integer number of columns, found 'x'");
  expect_parse_error(kGeneral + "3 3.0 3\n", 2, "found '3.0'");
  expect_parse_error(kGeneral + "3 3 3 3\n", 2, "unexpected '3' after the size line");
  expect_parse_error(kArrayGeneral + "3 3 9\n", 2, "unexpected '9' after the size line");
  expect_parse_error(kGeneral + "-3 3 3\n", 2, "number of rows must not be negative");
  expect_parse_error(kGeneral + "3 3 -1\n", 2, "number of entries must not be negative");
  expect_parse_error(kSymmetric + "3 4 0\n", 2, "must be square, found 3 x 4");
  expect_parse_error("%%MatrixMarket matrix array real skew-symmetric\n2 3\n", 2, "must be square");
}

TEST_CASE("sizes beyond 32-bit indices are refused before allocating", "[mm][errors]") {
  expect_size_limit(kGeneral + "% big\n2147483648 1 1\n1 1 1\n", 3, "number of rows '2147483648' exceeds the 32-bit limit");
  expect_size_limit(kGeneral + "1 1099511627776 1\n1 1 1\n", 2, "number of columns");
  expect_size_limit(kGeneral + "1 1 2147483648\n1 1 1\n", 2, "number of entries");
  expect_size_limit(kGeneral + "99999999999999999999999999999 1 1\n", 2, "exceeds the 32-bit limit");
  expect_size_limit(kArrayGeneral + "65536 65536\n1\n", 2, "dense array of 65536 x 65536");
  // The largest dimensions that fit are accepted (the body decides the rest).
  const CsrMatrix a = read(kGeneral + "1 2147483647 1\n1 2147483647 5\n");
  CHECK(entries(a) == std::vector<Entry>{{0, 2147483646, 5.0}});
  // A size line claiming 2^31-1 entries does not make the reader allocate for them: it fails on the count.
  expect_parse_error(kGeneral + "1 1 2147483647\n1 1 1\n", 3, "expected 2147483647 entries (size line 2), found only 1");
}

TEST_CASE("entry errors carry the entry's line", "[mm][errors]") {
  const std::string head = kGeneral + "% c\n3 3 3\n";  // entries start on line 4
  expect_parse_error(head + "1 1 1\n0 1 1\n3 3 3\n", 5, "row index '0' is out of range [1, 3]");
  expect_parse_error(head + "1 1 1\n1 4 1\n3 3 3\n", 5, "column index '4' is out of range [1, 3]");
  expect_parse_error(head + "1 1 1\n-1 1 1\n3 3 3\n", 5, "row index '-1'");
  expect_parse_error(head + "1 1 1\n99999999999999999999999 1 1\n3 3 3\n", 5, "row index '99999999999999999999999'");
  expect_parse_error(head + "1 1 1\nx 1 1\n", 5, "expected a row index, found 'x'");
  expect_parse_error(head + "1 1 1\n1.0 1 1\n", 5, "expected a row index, found '1.0'");
  expect_parse_error(head + "1 1 1\n2 2abc 1\n", 5, "expected a column index, found '2abc'");
  expect_parse_error(head + "1 1 1\n2 2 1.5x\n", 5, "expected a numeric value, found '1.5x'");
  expect_parse_error(head + "1 1 1\n2 2 --1\n", 5, "found '--1'");
  expect_parse_error(head + "1 1 1\n2 2\n", 5, "expected a numeric value, found end of line");
  expect_parse_error(head + "1 1 1\n2\n", 5, "expected a column index, found end of line");
  expect_parse_error(head + "1 1 1\n2 2 1 7\n", 5, "unexpected '7' after the entry; entries of this file have 3 fields");
  expect_parse_error(head + "1 1 1\n2 2 1 % trailing comment\n", 5, "unexpected '%'");
  expect_parse_error("%%MatrixMarket matrix coordinate pattern general\n2 2 2\n1 1\n2 2 1\n", 4,
                     "entries of this file have 2 fields");
  expect_parse_error(head + "1 1 1\n2 2 2\n3 3 3\n1 2 4\n", 7, "more entries than the 3 declared on the size line (line 3)");
  expect_parse_error(head + "1 1 1\n2 2 2\n3 3 3\n\n% fine\n1 2 4\n", 9, "more entries than the 3");
  expect_parse_error(head + "1 1 1\n2 2 2\n", 5, "expected 3 entries (size line 3), found only 2");
  expect_parse_error(head + "1 1 1\n2 2 2", 5, "found only 2");
  expect_parse_error(head + "1 1 1\n2 2 2\n\n\n", 7, "found only 2");
  expect_parse_error(head + "1 1 1\n2 2 2\n3 3" + std::string(1, '\0') + " 3\n", 6, "column index, found '3\\x00'");
}

TEST_CASE("symmetry errors", "[mm][errors]") {
  expect_parse_error("%%MatrixMarket matrix coordinate real skew-symmetric\n3 3 2\n2 1 1\n3 3 1\n", 4,
                     "diagonal entry (3, 3) in a skew-symmetric file");
  expect_parse_error("%%MatrixMarket matrix coordinate integer skew-symmetric\n3 3 1\n2 2 0\n", 3, "diagonal entry (2, 2)");
  expect_parse_error(kSymmetric + "3 3 3\n2 1 1\n3 3 1\n1 3 1\n", 5,
                     "entry (1, 3) is above the diagonal but earlier entries are below it");
  expect_parse_error("%%MatrixMarket matrix coordinate pattern symmetric\n3 3 2\n1 2\n3 2\n", 4,
                     "entry (3, 2) is below the diagonal but earlier entries are above it");
}

TEST_CASE("array errors", "[mm][errors]") {
  // Bodies of a 2 x 2 general array (4 values, one per line from line 3), each with the line of its error.
  const struct { const char* body; std::int64_t line; const char* fragment; } bad_bodies[] = {
      {"1\n2\n3\n", 5, "expected 4 values (size line 2), found only 3"},
      {"1\n2\n3\n4\n5\n", 7, "more values than the 4"},
      {"1\n2 3\n4\n", 4, "one value per line"},
      {"1\nabc\n3\n4\n", 4, "expected a numeric value, found 'abc'"},
      {"1\n1e400\n3\n4\n", 4, "beyond the double range"},
      {"1\n-nan\n3\n4\n", 4, "not finite"},
  };
  for (const auto& bad : bad_bodies) {
    INFO("body: " << bad.body);
    expect_parse_error(kArrayGeneral + "2 2\n" + bad.body, bad.line, bad.fragment);
  }
  expect_parse_error("%%MatrixMarket matrix array integer general\n1 1\n0.5\n", 3, "expected a numeric value");
  expect_parse_error(kArraySymmetric + "3 3\n1\n2\n3\n4\n5\n", 7, "expected 6 values");
}

// ---------------------------------------------------------------------------------------------------------
// Large bodies: the threaded parser must give the same matrix and the same error lines.

namespace {

/// A body of about `target_bytes`, entries in a scrambled order, with duplicates.
std::string large_coordinate_text(std::size_t target_bytes, const std::string& symmetry, std::int64_t& entries_out) {
  const std::int32_t n = 50000;
  std::mt19937_64 rng(7);
  std::string body;
  body.reserve(target_bytes + 100);
  std::int64_t count = 0;
  while (body.size() < target_bytes) {
    std::int32_t r = static_cast<std::int32_t>(rng() % n) + 1;
    std::int32_t c = static_cast<std::int32_t>(rng() % n) + 1;
    if (symmetry != "general" && r <= c) {
      if (r == c) continue;
      std::swap(r, c);
    }
    const double v = static_cast<double>(static_cast<std::int64_t>(rng() % 2000001) - 1000000) / 1024.0;
    body += std::to_string(r) + ' ' + std::to_string(c) + ' ' + std::to_string(v) + (count % 7 == 0 ? "\r\n" : "\n");
    ++count;
  }
  entries_out = count;
  return "%%MatrixMarket matrix coordinate real " + symmetry + "\n" + std::to_string(n) + " " + std::to_string(n) + " " +
         std::to_string(count) + "\n" + body;
}

}  // namespace

TEST_CASE("large files: threaded parse equals the triplet reference; errors keep exact lines", "[mm][large]") {
  std::int64_t count = 0;
  const std::string text = large_coordinate_text(std::size_t{20} << 20, "general", count);
  INFO("hardware threads: " << std::thread::hardware_concurrency());

  // Reference: triplets parsed by a plain stream reader.
  std::vector<std::int32_t> row, col;
  std::vector<double> value;
  {
    std::istringstream in(text);
    std::string line;
    std::getline(in, line);
    std::getline(in, line);
    std::int64_t r, c;
    double v;
    while (in >> r >> c >> v) {
      row.push_back(static_cast<std::int32_t>(r - 1));
      col.push_back(static_cast<std::int32_t>(c - 1));
      value.push_back(v);
    }
  }
  REQUIRE(static_cast<std::int64_t>(row.size()) == count);
  const CsrMatrix expected = bcsr24::csr_from_triplets(50000, 50000, row, col, value);
  const CsrMatrix a = read(text);
  CHECK(a.row_ptr == expected.row_ptr);
  CHECK(a.col_idx == expected.col_idx);
  CHECK(a.values == expected.values);

  // An error near the end: the line is counted across the chunks (header 2 lines, one entry per line).
  std::string bad = text;
  const std::size_t pos = bad.rfind("\n", bad.size() - 2000);
  bad.insert(pos + 1, "1 1 oops\n");
  std::int64_t line = 1;
  for (std::size_t i = 0; i <= pos; ++i) line += bad[i] == '\n';
  expect_parse_error(bad, line, "expected a numeric value, found 'oops'");

  // Too many / too few entries against the size line.
  const auto text_lines = static_cast<std::int64_t>(std::count(text.begin(), text.end(), '\n'));
  expect_parse_error(text + "1 1 1\n", text_lines + 1, "more entries than the " + std::to_string(count));
  const std::string fewer_header = kGeneral + "50000 50000 " + std::to_string(count + 1);
  const std::string fewer = fewer_header + text.substr(text.find('\n', text.find('\n') + 1));
  expect_parse_error(fewer, text_lines, "found only " + std::to_string(count));
}

TEST_CASE("large symmetric files: mirrored like small ones; mixed triangles across chunks are refused", "[mm][large]") {
  std::int64_t count = 0;
  const std::string text = large_coordinate_text(std::size_t{20} << 20, "symmetric", count);
  const CsrMatrix a = read(text);
  CHECK(a.rows == 50000);
  // Symmetric: A equals its transpose, entry for entry.
  std::vector<std::tuple<std::int32_t, std::int32_t, double>> e = entries(a), t;
  for (const auto& [r, c, v] : e) t.emplace_back(c, r, v);
  std::sort(t.begin(), t.end());
  CHECK(e == t);
  // The last entry flipped to the upper triangle, far from the first chunk: refused, with its line.
  std::string bad = text;
  const std::size_t last_start = bad.rfind('\n', bad.size() - 2) + 1;
  std::istringstream last(bad.substr(last_start));
  std::int64_t r, c;
  std::string v;
  last >> r >> c >> v;
  bad = bad.substr(0, last_start) + std::to_string(c) + " " + std::to_string(r) + " " + v + "\n";
  std::int64_t line = 1;
  for (std::size_t i = 0; i < last_start; ++i) line += bad[i] == '\n';
  expect_parse_error(bad, line, "is above the diagonal but earlier entries are below it");
}

// ---------------------------------------------------------------------------------------------------------
// Writer

TEST_CASE("write_matrix_market round-trips exactly", "[mm][write]") {
  TempDir dir;
  const CsrMatrix a = bcsr24::csr_from_triplets(3, 5, {0, 2, 2, 1}, {4, 0, 3, 1},
                                                {0.1, -1.0 / 3.0, 0.0, 1.2345678901234567e-300});
  const std::string path = dir.path("out.mtx");
  bcsr24::write_matrix_market(path, a);
  MatrixMarketInfo info;
  const CsrMatrix b = bcsr24::read_matrix_market(path, {}, &info);
  CHECK(info.symmetry == "general");
  CHECK(b.rows == 3);
  CHECK(b.cols == 5);
  CHECK(entries(b) == entries(a));  // bit-exact: shortest round-trip formatting, explicit zero kept

  CsrMatrix broken = a;
  broken.col_idx[0] = 7;
  CHECK_THROWS_AS(bcsr24::write_matrix_market(dir.path("broken.mtx"), broken), bcsr24::InvalidArgument);
  CHECK_THROWS_AS(bcsr24::write_matrix_market(dir.path("no/such/dir.mtx"), a), bcsr24::Error);
}
