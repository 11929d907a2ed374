// Runs every file listed in ../shared/data/mm-edge/README.tsv through the reader and checks its outcome.
#include <catch2/catch.hpp>

#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "bcsr24/error.hpp"
#include "bcsr24/matrix_market.hpp"
#include "test_skip.hpp"
#include "test_support.hpp"

namespace {

enum class Outcome {
  loads,        ///< read without error
  parse_error,  ///< ParseError for malformed content
  unsupported,  ///< ParseError whose problem says "not supported" (well-formed, deliberately not read)
  size_limit,   ///< SizeLimitError
  any_error     ///< ParseError or SizeLimitError: the TSV's "error..." rows
};

struct Policy {
  Outcome outcome;
  const char* reason;
};

const std::string kFmm = "fast_matrix_market/";
const std::string kFmmPy = "fast_matrix_market/python/tests/matrices/";
const std::string kFmmT = "fast_matrix_market/tests/matrices/";

/// Our decision for every row whose outcome is not simply "valid -> loads" / "error -> throws": rows the TSV
/// marks as ambiguous, and rows whose source reader's expectation does not carry over to bcsr24 (complex
/// values, vectors, values beyond double, sizes beyond int32, skew diagonals). docs/READER.md lists the same.
std::map<std::string, Policy> policy_table() {
  std::map<std::string, Policy> table;
  const auto each = [&](Outcome outcome, const char* reason, std::initializer_list<std::string> files) {
    for (const std::string& file : files) table[file] = {outcome, reason};
  };
  each(Outcome::unsupported, "complex field: bcsr24 is real-valued, refused by design",
       {kFmmPy + "long_double/longcomplex_array.mtx", kFmmPy + "long_double/longcomplex_coordinate.mtx",
        kFmmPy + "matrix_array_complex_general.mtx", kFmmPy + "matrix_coordinate_complex_general.mtx",
        kFmmPy + "matrix_coordinate_complex_hermitian.mtx", kFmmT + "eye3_complex.mtx",
        kFmmT + "graphblas/matrix_double_complex.mtx", kFmmT + "graphblas/matrix_float_complex.mtx",
        kFmmT + "overflow/overflow_value_gt_complex128.mtx", kFmmT + "symmetry/coordinate_hermitian_row.mtx",
        kFmmT + "symmetry/coordinate_hermitian_row_general.mtx",
        kFmmT + "symmetry/coordinate_hermitian_row_general_dup.mtx",
        kFmmT + "symmetry/coordinate_hermitian_row_general_zero.mtx", kFmmT + "symmetry_array/array_hermitian.mtx",
        kFmmT + "symmetry_array/array_hermitian_general.mtx",
        "scipy/gh11389_complex_symmetric_no_trailing_newline.mtx", "scipy/hermitian.mtx",
        "sprs/complex/hermitian.mtx", "sprs/complex/simple.mtx", "sprs/complex/skew-symmetric.mtx",
        "sprs/complex/symmetric.mtx"});
  each(Outcome::unsupported, "vector object: bcsr24 reads matrices only, refused",
       {kFmmPy + "scipy_crashes/vector_array_real_general.mtx",
        kFmmPy + "scipy_crashes/vector_coordinate_real_general.mtx", kFmmT + "vector_array.mtx",
        kFmmT + "vector_coordinate.mtx", kFmmT + "vector_coordinate_complex.mtx",
        kFmmT + "vector_coordinate_complex_dupes.mtx", kFmmT + "vector_coordinate_dupes.mtx"});
  each(Outcome::parse_error, "value beyond double: inf would become fp16 inf downstream, so ParseError",
       {kFmmPy + "long_double/longdouble_array.mtx", kFmmPy + "long_double/longdouble_coordinate.mtx",
        kFmmT + "overflow/overflow_value_gt_float128.mtx", kFmmT + "overflow/overflow_value_gt_float64.mtx"});
  each(Outcome::parse_error, "skew-symmetric with a diagonal entry: NIST stores the strict lower triangle only",
       {kFmmPy + "matrix_coordinate_real_skew-symmetric.mtx", "scipy/64bit_integer_sparse_skew.mtx",
        "scipy/skew_with_diagonal.mtx"});
  each(Outcome::loads, "integer values are read as double",
       {kFmmT + "overflow/overflow_value_gt_int32.mtx", kFmmT + "overflow/overflow_value_gt_int64.mtx"});
  each(Outcome::loads, "integer values are read as double; scipy's OverflowError is about its int64 storage",
       {"scipy/over64bit_integer_dense.mtx", "scipy/over64bit_integer_sparse.mtx"});
  // Decisions of their own.
  const std::map<std::string, Policy> single = {
      {kFmmPy + "matrix_coordinate_real_general.mtx.bz2",
       {Outcome::unsupported, "bzip2 is recognised by its magic bytes and refused; only gzip is inflated"}},
      {kFmmPy + "misc/windows_newlines.mtx", {Outcome::loads, "CR-only line endings are line endings"}},
      {kFmmPy + "scipy_crashes/dim_over_32_bit.mtx", {Outcome::size_limit, "2^40 rows do not fit 32-bit indices"}},
      {kFmmT + "overflow/overflow_index_gt_int8.mtx", {Outcome::loads, "index 300 fits our int32 indices"}},
      {kFmmT + "permissive/README.md", {Outcome::parse_error, "not a Matrix Market file: no banner"}},
      {kFmmT + "permissive/permissive_banner_leading_spaces_eye3.mtx",
       {Outcome::loads, "leading blanks before the banner are harmless (scipy gh-18123 reads them too)"}},
      {kFmmT + "permissive/permissive_banner_one_percent_eye3.mtx",
       {Outcome::parse_error, "'%MatrixMarket' is a comment line, so the file has no banner"}},
      {kFmmT + "permissive/permissive_lines_indented.mtx", {Outcome::loads, "leading blanks on any line are harmless"}},
      {kFmmT + "permissive/windows_lineendings_nist_ex1_more_freeformat.mtx",
       {Outcome::loads, "CRLF is a line ending"}},
      {"scipy/gh18123_banner_leading_space.mtx", {Outcome::loads, "leading blanks before the banner are harmless"}},
      {"scipy/unsigned_integer_array.mtx",
       {Outcome::loads, "'unsigned-integer' (scipy/fmm extension) reads as integer"}},
      {"sprs/complex/hermitian-int.mtx",
       {Outcome::loads, "hermitian on a real-valued field is symmetric, for integer as for real (consistent with "
                        "coordinate_hermitian_real_row.mtx)"}},
  };
  table.insert(single.begin(), single.end());
  return table;
}

/// Files that must read to the same matrix (same shape, same dense values) as a partner file.
std::map<std::string, std::string> same_matrix_table() {
  std::map<std::string, std::string> same = {
      {kFmmT + "eye3_str.mtx", kFmmT + "eye3.mtx"},
      {kFmmT + "eye3_pattern.mtx", kFmmT + "eye3.mtx"},
      {kFmmT + "eye3_array.mtx", kFmmT + "eye3.mtx"},
      {kFmmPy + "eye3.mtx", kFmmT + "eye3.mtx"},
      {kFmmPy + "misc/windows_newlines.mtx", kFmmT + "eye3.mtx"},
      {kFmmT + "permissive/permissive_banner_leading_spaces_eye3.mtx", kFmmT + "eye3.mtx"},
      {kFmmT + "nist_ex1_freeformat.mtx", kFmmT + "nist_ex1.mtx"},
      {kFmmT + "nist_ex1_more_freeformat.mtx", kFmmT + "nist_ex1.mtx"},
      {kFmmT + "permissive/windows_lineendings_nist_ex1_more_freeformat.mtx", kFmmT + "nist_ex1.mtx"},
      {"scipy/empty_lines_freeformat.mtx", kFmmT + "nist_ex1.mtx"},
      {"scipy/general_nist_comment_block.mtx", kFmmT + "nist_ex1.mtx"},
      {"sprs/simple.mm", kFmmT + "nist_ex1.mtx"},
      {kFmmPy + "matrix_coordinate_real_general.mtx.gz", kFmmPy + "matrix_coordinate_real_general.mtx"},
      {kFmmPy + "matrix_coordinate_integer_general.mtx", kFmmPy + "matrix_coordinate_real_general.mtx"},
      {kFmmPy + "matrix_array_integer_general.mtx", kFmmPy + "matrix_array_real_general.mtx"},
  };
  // Each symmetric file equals its "_general" expansion; the "_zero" variant (an explicit 0 summed with the
  // diagonal) too. The "_dup" variant lists the diagonal twice, which sums to twice the value, so it is not
  // a partner.
  for (const char* kind : {"hermitian_real", "pattern_symmetric", "skew_symmetric", "symmetric"}) {
    const std::string base = kFmmT + "symmetry/coordinate_" + kind + "_row";
    same[base + "_general.mtx"] = base + ".mtx";
    same[base + "_general_zero.mtx"] = base + ".mtx";
  }
  for (const char* kind : {"skew-symmetric", "symmetric"}) {
    const std::string base = kFmmT + "symmetry_array/array_" + std::string(kind);
    same[base + "_general.mtx"] = base + ".mtx";
  }
  return same;
}

/// Shapes that can be read off the files: rows, cols, stored entries after expansion and duplicate sums.
struct Shape {
  std::int64_t rows, cols, nnz;
};
std::map<std::string, Shape> shape_table() {
  return {
      {kFmmT + "eye3.mtx", {3, 3, 3}},
      {kFmmT + "eye3_array.mtx", {3, 3, 9}},  // array files store every value, zeros included
      {kFmmT + "nist_ex1.mtx", {5, 5, 8}},
      {kFmmT + "2col_array.mtx", {3, 2, 6}},
      {kFmmT + "kepner_gilbert_graph.mtx", {7, 7, 12}},
      {kFmmT + "row_3by4.mtx", {3, 4, 4}},
      {kFmmT + "graphblas/matrix_bool.mtx", {3, 1, 3}},  // 4 listed, (3,1) twice
      {kFmmT + "overflow/overflow_index_gt_int8.mtx", {1000, 1000, 1}},
      {kFmmPy + "matrix_coordinate_pattern_symmetric.mtx", {3, 3, 5}},
      {kFmmT + "symmetry/coordinate_symmetric_row.mtx", {3, 3, 5}},
      {kFmmT + "symmetry/coordinate_skew_symmetric_row.mtx", {3, 3, 4}},
      {kFmmT + "symmetry_array/array_skew-symmetric.mtx", {3, 3, 9}},
      {"scipy/empty_10x10_symmetric_nnz0.mtx", {10, 10, 0}},
      {"scipy/general_nist_comment_block.mtx", {5, 5, 8}},
      {"scipy/symmetric.mtx", {5, 5, 9}},
      {"scipy/64bit_integer_sparse_symmetric.mtx", {2, 2, 4}},  // stores the upper triangle: mirrored
      {"sprs/complex/hermitian-int.mtx", {2, 2, 3}},
      {"sprs/symmetric.mm", {5, 5, 8}},
      {"sprs/pattern.mm", {4, 4, 4}},
  };
}

struct TsvRow {
  std::string file, exercises, expected;
};

/// Undoes the TSV's quoting ("..." with "" for a quote) of one field.
std::string unquote(const std::string& s) {
  if (s.size() < 2 || s.front() != '"' || s.back() != '"') return s;
  std::string out;
  for (std::size_t i = 1; i + 1 < s.size(); ++i) {
    out += s[i];
    if (s[i] == '"' && s[i + 1] == '"') ++i;
  }
  return out;
}

std::vector<TsvRow> read_tsv(const std::string& path) {
  std::ifstream in(path);
  std::vector<TsvRow> rows;
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    std::vector<std::string> fields;
    std::stringstream ss(line);
    std::string f;
    while (std::getline(ss, f, '\t')) fields.push_back(unquote(f));
    REQUIRE(fields.size() >= 3);
    rows.push_back({fields[0], fields[1], fields[2]});
  }
  return rows;
}

bool starts_with(const std::string& s, const std::string& prefix) { return s.compare(0, prefix.size(), prefix) == 0; }

/// Dense copy (small matrices only) for comparing files of different storage (array vs coordinate).
std::vector<double> dense(const bcsr24::CsrMatrix& a) {
  std::vector<double> d(static_cast<std::size_t>(a.rows) * static_cast<std::size_t>(a.cols), 0.0);
  for (std::int32_t r = 0; r < a.rows; ++r)
    for (std::int32_t p = a.row_ptr[static_cast<std::size_t>(r)]; p < a.row_ptr[static_cast<std::size_t>(r) + 1]; ++p)
      d[static_cast<std::size_t>(r) * static_cast<std::size_t>(a.cols) + static_cast<std::size_t>(a.col_idx[static_cast<std::size_t>(p)])] +=
          a.values[static_cast<std::size_t>(p)];
  return d;
}

}  // namespace

TEST_CASE("every mm-edge file meets its expected (or our documented) outcome", "[mm][edge][.needs_data]") {
  const auto shared = bcsr24::test::shared_data_dir();
  if (!shared) BCSR24_SKIP("shared data not found (../shared/data or $BCSR24_SHARED_DATA): no mm-edge files");
  const std::string dir = *shared + "/mm-edge/";
  const std::vector<TsvRow> rows = read_tsv(dir + "README.tsv");
  const auto policies = policy_table();
  const auto same = same_matrix_table();
  const auto shapes = shape_table();

  std::set<std::string> listed;
  std::size_t walked = 0;
  for (const TsvRow& row : rows) {
    listed.insert(row.file);
    INFO(row.file << "\n  exercises: " << row.exercises << "\n  TSV expects: " << row.expected);
    Outcome outcome;
    const auto policy = policies.find(row.file);
    if (policy != policies.end()) {
      outcome = policy->second.outcome;
      INFO("our policy: " << policy->second.reason);
    } else if (starts_with(row.expected, "valid")) {
      outcome = Outcome::loads;
    } else if (starts_with(row.expected, "error")) {
      outcome = Outcome::any_error;
    } else {
      FAIL("ambiguous TSV row without a policy entry: add it to policy_table() and docs/READER.md");
      continue;
    }

    const std::string path = dir + row.file;
    std::string error;
    bool loaded = false;
    bcsr24::CsrMatrix a;
    bcsr24::MatrixMarketInfo info;
    try {
      a = bcsr24::read_matrix_market(path, {}, &info);
      loaded = true;
    } catch (const bcsr24::ParseError& e) {
      // What the reader refuses on purpose says so; everything else is malformed content.
      const bool unsupported = e.problem().find("not supported") != std::string::npos;
      error = unsupported ? "unsupported" : "parse";
      INFO(e.what());
      CHECK((outcome == (unsupported ? Outcome::unsupported : Outcome::parse_error) || outcome == Outcome::any_error));
      CHECK(e.file() == path);
      if (!unsupported) CHECK(e.line() >= 1);  // every malformed-content error names its line
    } catch (const bcsr24::SizeLimitError& e) {
      error = "size";
      INFO(e.what());
      CHECK((outcome == Outcome::size_limit || outcome == Outcome::any_error));
      CHECK_THAT(std::string(e.what()), Catch::StartsWith(path + ":"));
    }
    // Any other exception type escapes and fails the test: that would be a reader bug.
    if (loaded) {
      CHECK(outcome == Outcome::loads);
      CHECK_NOTHROW(bcsr24::validate_csr(a));
      CHECK(a.rows == info.rows);
      CHECK(a.cols == info.cols);
      // Duplicates are summed: fewer stored than listed (array files have none).
      if (row.expected.find("duplicate") != std::string::npos && row.expected.find("duplicate-diagonal") == std::string::npos)
        CHECK(a.nnz() < info.entries);
      const auto shape = shapes.find(row.file);
      if (shape != shapes.end()) {
        CHECK(a.rows == shape->second.rows);
        CHECK(a.cols == shape->second.cols);
        CHECK(a.nnz() == shape->second.nnz);
      }
      const auto partner = same.find(row.file);
      if (partner != same.end()) {
        INFO("compared with " << partner->second);
        const bcsr24::CsrMatrix b = bcsr24::read_matrix_market(dir + partner->second);
        REQUIRE(a.rows == b.rows);
        REQUIRE(a.cols == b.cols);
        CHECK(dense(a) == dense(b));
      }
    }
    ++walked;
  }
  // Every row was walked, and the tables name only files that the TSV lists.
  std::ifstream tsv(dir + "README.tsv");
  std::size_t tsv_rows = 0;
  for (std::string line; std::getline(tsv, line);) tsv_rows += line.empty() ? 0 : 1;
  CHECK(walked == tsv_rows - 1);  // all lines but the header
  CHECK(walked == rows.size());
  for (const auto& [file, p] : policies) {
    INFO("policy entry not in the TSV: " << file);
    CHECK(listed.count(file) == 1);
  }
  for (const auto& [file, partner] : same) {
    INFO("same-matrix entry not in the TSV: " << file << " / " << partner);
    CHECK(listed.count(file) == 1);
    CHECK(listed.count(partner) == 1);
  }
  for (const auto& [file, s] : shapes) {
    INFO("shape entry not in the TSV: " << file);
    CHECK(listed.count(file) == 1);
  }
}
