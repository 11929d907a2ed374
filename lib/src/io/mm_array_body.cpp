// Parses array-format values (one per line, column-major, packed triangle for symmetric kinds) into CSR.
#include "io/mm_array_body.hpp"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "io/mm_text.hpp"

namespace bcsr24::io {

namespace {

/// Values in file order; stops with an error at the (expected + 1)-th value or at a short file.
std::vector<double> parse_values(const char* data, std::size_t size, const MmHeader& header, const std::string& name) {
  const std::int64_t expected = header.info.entries;
  const bool integer = header.info.field == MmField::integer;
  const char* p = data + header.body_offset;
  const char* end = data + size;
  std::int64_t line = header.body_first_line;
  std::vector<double> values;
  // "1\n" is the shortest value line: the byte count bounds what a lying size line can make us allocate.
  values.reserve(std::min(static_cast<std::size_t>(expected), static_cast<std::size_t>(end - p) / 2 + 1));
  while (true) {
    p = skip_blanks(p, end);
    if (p == end) break;
    if (is_line_end(*p)) {
      p = skip_line_end(p, end);
      ++line;
      continue;
    }
    if (*p == '%') {
      p = find_line_end(p, end);
      continue;
    }
    if (static_cast<std::int64_t>(values.size()) == expected)
      throw_parse_error(name, line,
                        "more values than the " + std::to_string(expected) + " the size line (line " +
                            std::to_string(header.size_line) + ") implies");
    const char* tok = p;
    double v = 0.0;
    const ValueScan s = integer ? scan_integer_value(p, end, v) : scan_real(p, end, v);
    if (s == ValueScan::overflow) throw_parse_error(name, line, "value " + quote_token(tok, end) + " is beyond the double range");
    if (s == ValueScan::non_finite)
      throw_parse_error(name, line, "value " + quote_token(tok, end) + " is not finite (inf and nan are refused)");
    if (s != ValueScan::ok) throw_parse_error(name, line, "expected a numeric value, found " + quote_token(tok, end));
    p = skip_blanks(p, end);
    if (p < end && !is_line_end(*p))
      throw_parse_error(name, line, "unexpected " + quote_token(p, end) + " after the value; array files have one value per line");
    values.push_back(v);
  }
  if (static_cast<std::int64_t>(values.size()) < expected)
    throw_parse_error(name, line_at_end(data, size, line),
                      "expected " + std::to_string(expected) + " values (size line " + std::to_string(header.size_line) +
                          "), found only " + std::to_string(values.size()));
  return values;
}

}  // namespace

CsrMatrix parse_array_body(const char* data, std::size_t size, const MmHeader& header, const std::string& name) {
  const std::vector<double> stored = parse_values(data, size, header, name);
  const MmBanner& info = header.info;
  const auto rows = static_cast<std::int32_t>(info.rows);
  const auto cols = static_cast<std::int32_t>(info.cols);
  const std::int64_t n = info.rows;  // symmetric kinds are square (checked with the size line)

  // Offset of column j's first stored value in the packed lower triangle (with / without the diagonal).
  auto packed = [n](std::int64_t j) { return j * n - j * (j - 1) / 2; };
  auto packed_strict = [n](std::int64_t j) { return j * (n - 1) - j * (j - 1) / 2; };
  auto element = [&](std::int64_t i, std::int64_t j) -> double {
    switch (info.symmetry) {
      case MmSymmetry::general:
        return stored[static_cast<std::size_t>(j * info.rows + i)];
      case MmSymmetry::skew_symmetric:
        if (i == j) return 0.0;
        return i > j ? stored[static_cast<std::size_t>(packed_strict(j) + i - j - 1)]
                     : -stored[static_cast<std::size_t>(packed_strict(i) + j - i - 1)];
      default:  // symmetric, and hermitian on a real field
        return i >= j ? stored[static_cast<std::size_t>(packed(j) + i - j)]
                      : stored[static_cast<std::size_t>(packed(i) + j - i)];
    }
  };

  CsrMatrix a;
  a.rows = rows;
  a.cols = cols;
  const auto total = static_cast<std::size_t>(info.rows * info.cols);  // <= INT32_MAX, checked by the header
  a.row_ptr.resize(static_cast<std::size_t>(rows) + 1);
  a.col_idx.resize(total);
  a.values.resize(total);
  for (std::int64_t i = 0; i < rows; ++i) {
    a.row_ptr[static_cast<std::size_t>(i)] = static_cast<std::int32_t>(i * cols);
    for (std::int64_t j = 0; j < cols; ++j) {
      const auto k = static_cast<std::size_t>(i * cols + j);
      a.col_idx[k] = static_cast<std::int32_t>(j);
      a.values[k] = element(i, j);
    }
  }
  a.row_ptr[static_cast<std::size_t>(rows)] = static_cast<std::int32_t>(total);
  return a;
}

}  // namespace bcsr24::io
