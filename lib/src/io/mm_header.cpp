// Parses the Matrix Market banner and size line; keywords are case-insensitive, sizes must fit int32.
#include "io/mm_header.hpp"

#include <cctype>
#include <limits>
#include <string>
#include <vector>

#include "bcsr24/error.hpp"
#include "io/mm_text.hpp"

namespace bcsr24::io {

namespace {

constexpr std::int64_t kMaxIndex = std::numeric_limits<std::int32_t>::max();

std::string lowercase(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

struct Token {
  const char* begin;
  std::string lower;  ///< for keyword comparison
};

/// Splits [p, line_end) at blanks; stops after `max_tokens` so a huge binary "line" costs nothing.
std::vector<Token> split_words(const char* p, const char* line_end, std::size_t max_tokens) {
  std::vector<Token> words;
  while (words.size() < max_tokens) {
    p = skip_blanks(p, line_end);
    if (p == line_end) break;
    const char* b = p;
    while (p < line_end && !is_blank(*p)) ++p;
    words.push_back({b, lowercase(std::string(b, p))});
  }
  return words;
}

MmFormat parse_format(const Token& t, const char* end, const std::string& name) {
  if (t.lower == "coordinate") return MmFormat::coordinate;
  if (t.lower == "array") return MmFormat::array;
  throw_parse_error(name, 1, "unknown format " + quote_token(t.begin, end) + " in the banner (expected 'coordinate' or 'array')");
}

MmField parse_field(const Token& t, const char* end, const std::string& name) {
  if (t.lower == "real") return MmField::real;
  if (t.lower == "double") return MmField::double_;
  // "unsigned-integer" is a scipy / fast_matrix_market extension; read like integer.
  if (t.lower == "integer" || t.lower == "unsigned-integer") return MmField::integer;
  if (t.lower == "pattern") return MmField::pattern;
  if (t.lower == "complex") return MmField::complex;
  throw_parse_error(name, 1,
                    "unknown field " + quote_token(t.begin, end) +
                        " in the banner (expected 'real', 'double', 'integer', 'pattern' or 'complex')");
}

MmSymmetry parse_symmetry(const Token& t, const char* end, const std::string& name) {
  if (t.lower == "general") return MmSymmetry::general;
  if (t.lower == "symmetric") return MmSymmetry::symmetric;
  if (t.lower == "skew-symmetric") return MmSymmetry::skew_symmetric;
  if (t.lower == "hermitian") return MmSymmetry::hermitian;
  throw_parse_error(name, 1,
                    "unknown symmetry " + quote_token(t.begin, end) +
                        " in the banner (expected 'general', 'symmetric', 'skew-symmetric' or 'hermitian')");
}

/// Reads the banner line into `info`. Leading blanks are accepted (scipy gh-18123 files have them).
const char* parse_banner(const char* p, const char* end, const std::string& name, MmBanner& info) {
  p = skip_blanks(p, end);
  if (p == end) throw_parse_error(name, 1, "empty input: expected a '%%MatrixMarket' banner line");
  const char* line_end = find_line_end(p, end);
  const std::vector<Token> words = split_words(p, line_end, 6);
  if (words.empty() || words[0].lower != "%%matrixmarket")
    throw_parse_error(name, 1,
                      "bad banner: the first line must start with '%%MatrixMarket', found " +
                          quote_token(words.empty() ? p : words[0].begin, end));
  if (words.size() < 5)
    throw_parse_error(name, 1, "incomplete banner: expected '%%MatrixMarket matrix <format> <field> <symmetry>'");
  if (words.size() > 5)
    throw_parse_error(name, 1, "unexpected " + quote_token(words[5].begin, end) + " after the symmetry in the banner");

  const bool is_vector = words[1].lower == "vector";
  if (words[1].lower != "matrix" && !is_vector)
    throw_parse_error(name, 1, "unknown object " + quote_token(words[1].begin, end) + " in the banner (expected 'matrix')");
  info.format = parse_format(words[2], end, name);
  info.field = parse_field(words[3], end, name);
  info.symmetry = parse_symmetry(words[4], end, name);

  // Well-formed but not for us: say so precisely rather than "bad banner".
  if (is_vector)
    throw ParseError(name, 1, "Matrix Market vector files are not supported; bcsr24 reads the 'matrix' object only");
  if (info.field == MmField::complex) throw ParseError(name, 1, "complex matrices are not supported");
  if (info.field == MmField::pattern && info.format == MmFormat::array)
    throw_parse_error(name, 1, "the 'pattern' field is only valid with the 'coordinate' format");
  if (info.field == MmField::pattern && info.symmetry != MmSymmetry::general && info.symmetry != MmSymmetry::symmetric)
    throw_parse_error(name, 1, "a 'pattern' matrix can only be 'general' or 'symmetric' (it has no values to negate or conjugate)");
  return line_end;
}

/// Skips blank and comment lines after the banner; returns the start of the size line.
const char* find_size_line(const char* p, const char* data, const char* end, const std::string& name,
                           std::int64_t& line) {
  while (true) {
    const char* q = skip_blanks(p, end);
    if (q == end)
      throw_parse_error(name, line_at_end(data, static_cast<std::size_t>(end - data), line),
                        "missing size line after the banner");
    if (is_line_end(*q)) {
      p = skip_line_end(q, end);
      ++line;
    } else if (*q == '%') {
      p = skip_line_end(find_line_end(q, end), end);
      ++line;
    } else {
      return q;
    }
  }
}

}  // namespace

std::int64_t line_at_end(const char* data, std::size_t size, std::int64_t line) noexcept {
  if (size > 0 && is_line_end(data[size - 1]) && line > 1) return line - 1;
  return line;
}

MmHeader parse_header(const char* data, std::size_t size, const std::string& name) {
  MmHeader h;
  const char* end = data + size;
  const char* p = data;
  // A UTF-8 byte-order mark is invisible in editors; it is not a malformed banner.
  if (size >= 3 && static_cast<unsigned char>(p[0]) == 0xef && static_cast<unsigned char>(p[1]) == 0xbb &&
      static_cast<unsigned char>(p[2]) == 0xbf)
    p += 3;
  p = parse_banner(p, end, name, h.info);
  std::int64_t line = 1;
  if (p < end) {
    p = skip_line_end(p, end);
    ++line;
  }

  p = find_size_line(p, data, end, name, line);
  h.size_line = line;
  const bool coordinate = h.info.format == MmFormat::coordinate;
  const int needed = coordinate ? 3 : 2;
  const char* what[3] = {"rows", "columns", "entries"};
  const char* expected = coordinate ? "'rows columns entries'" : "'rows columns'";
  std::int64_t value[3] = {0, 0, 0};
  const char* token[3] = {nullptr, nullptr, nullptr};
  for (int i = 0; i < needed; ++i) {
    p = skip_blanks(p, end);
    if (p == end || is_line_end(*p))
      throw_parse_error(name, line, std::string("size line is missing the number of ") + what[i] + "; expected " + expected);
    token[i] = p;
    if (!scan_int(p, end, value[i]) || !at_token_end(p, end))
      throw_parse_error(name, line,
                        std::string("bad size line: expected an integer number of ") + what[i] + ", found " +
                            quote_token(token[i], end));
  }
  p = skip_blanks(p, end);
  if (p < end && !is_line_end(*p))
    throw_parse_error(name, line, "unexpected " + quote_token(p, end) + " after the size line; expected " + expected);
  for (int i = 0; i < needed; ++i) {
    if (value[i] < 0)
      throw_parse_error(name, line, std::string("the number of ") + what[i] + " must not be negative, found " +
                                        quote_token(token[i], end));
    if (value[i] > kMaxIndex)
      throw_size_limit(name, line, std::string("the number of ") + what[i] + " " + quote_token(token[i], end) +
                                       " exceeds the 32-bit limit 2147483647");
  }
  MmBanner& info = h.info;
  info.rows = value[0];
  info.cols = value[1];
  const bool symmetric_kind = info.symmetry != MmSymmetry::general;
  if (symmetric_kind && info.rows != info.cols)
    throw_parse_error(name, line, "a symmetric, skew-symmetric or hermitian matrix must be square, found " +
                                      std::to_string(info.rows) + " x " + std::to_string(info.cols));
  if (coordinate) {
    info.entries = value[2];
  } else {
    // Array files list every stored value; we keep all of them (the matrix is dense), so the expanded
    // count rows * cols must fit the 32-bit nnz of the CSR. Both factors are < 2^31: no overflow.
    const std::int64_t n = info.rows;
    if (info.rows * info.cols > kMaxIndex)
      throw_size_limit(name, line, "a dense array of " + std::to_string(info.rows) + " x " + std::to_string(info.cols) +
                                       " has more than 2147483647 entries");
    info.entries = info.symmetry == MmSymmetry::general          ? info.rows * info.cols
                   : info.symmetry == MmSymmetry::skew_symmetric ? n * (n - 1) / 2
                                                                 : n * (n + 1) / 2;
  }
  if (p < end) {
    p = skip_line_end(p, end);
    ++line;
  }
  h.body_offset = static_cast<std::size_t>(p - data);
  h.body_first_line = line;
  return h;
}

}  // namespace bcsr24::io
