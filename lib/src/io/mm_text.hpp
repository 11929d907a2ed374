// Byte-level scanning primitives shared by the Matrix Market header and body parsers.
#pragma once

#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <system_error>

namespace bcsr24::io {

/// Field separators inside a line. The format says "blanks"; tabs appear in real files.
inline bool is_blank(char c) noexcept { return c == ' ' || c == '\t'; }

/// '\n' (LF and CRLF files) or '\r' (CRLF files, and classic-Mac files that use CR alone).
inline bool is_line_end(char c) noexcept { return c == '\n' || c == '\r'; }

/// Whether a token may stop at `p`: a number glued to other text ("12abc") is not a number.
inline bool at_token_end(const char* p, const char* end) noexcept {
  return p == end || is_blank(*p) || is_line_end(*p);
}

inline const char* skip_blanks(const char* p, const char* end) noexcept {
  while (p < end && is_blank(*p)) ++p;
  return p;
}

/// Moves to the terminator of the current line (or `end`), not past it.
inline const char* find_line_end(const char* p, const char* end) noexcept {
  while (p < end && !is_line_end(*p)) ++p;
  return p;
}

/// Steps over one line terminator at `p`: "\r\n" counts as one, so CRLF and CR-only files number
/// their lines like LF files do.
inline const char* skip_line_end(const char* p, const char* end) noexcept {
  if (p < end && *p == '\r') {
    ++p;
    if (p < end && *p == '\n') ++p;
  } else if (p < end && *p == '\n') {
    ++p;
  }
  return p;
}

/// Largest value the saturating integer scanner distinguishes; anything above is "too large" for every
/// use in the reader (dimensions and indices must fit int32), so exact digits beyond it do not matter.
constexpr std::int64_t kSaturatedInt = std::numeric_limits<std::int64_t>::max() / 10 - 10;

/// Scans "[-]digits" at `p`. Returns false (p unchanged) when there is no digit. Values too large for
/// `kSaturatedInt` saturate to it, so a 40-digit index reads as "too large" rather than wrapping around.
inline bool scan_int(const char*& p, const char* end, std::int64_t& out) noexcept {
  const char* q = p;
  bool negative = false;
  if (q < end && *q == '-') {
    negative = true;
    ++q;
  }
  if (q == end || static_cast<unsigned char>(*q - '0') > 9) return false;
  std::int64_t v = 0;
  while (q < end && static_cast<unsigned char>(*q - '0') <= 9) {
    v = v * 10 + (*q - '0');
    if (v > kSaturatedInt) v = kSaturatedInt;
    ++q;
  }
  out = negative ? -v : v;
  p = q;
  return true;
}

/// Outcome of scanning one value token.
enum class ValueScan {
  ok,
  not_a_number,  ///< no number at p, or a number glued to other characters
  non_finite,    ///< "inf" / "nan": we never hand non-finite values to the fp16 conversion
  overflow       ///< beyond the double range (e.g. 1e310)
};

/// Decides, for a token that std::from_chars found out of range, whether it was too large (overflow) or
/// too small (underflow, which we round to zero like strtod). Only the decimal exponent matters.
inline bool decimal_token_overflows(const char* b, const char* e) noexcept {
  const char* p = b;
  if (p < e && (*p == '+' || *p == '-')) ++p;
  std::int64_t int_digits = 0;       // significant digits before the point
  std::int64_t leading_frac_zeros = 0;
  bool seen_nonzero = false;
  for (; p < e && static_cast<unsigned char>(*p - '0') <= 9; ++p) {
    if (*p != '0') seen_nonzero = true;
    if (seen_nonzero) ++int_digits;
  }
  if (p < e && *p == '.') {
    for (++p; p < e && static_cast<unsigned char>(*p - '0') <= 9; ++p) {
      if (*p != '0') seen_nonzero = true;
      if (!seen_nonzero) ++leading_frac_zeros;
    }
  }
  std::int64_t exponent = 0;
  if (p < e && (*p == 'e' || *p == 'E')) {
    ++p;
    std::int64_t sign = 1;
    if (p < e && (*p == '+' || *p == '-')) sign = (*p++ == '-') ? -1 : 1;
    scan_int(p, e, exponent);
    exponent *= sign;
  }
  const std::int64_t magnitude = (int_digits > 0 ? int_digits : -leading_frac_zeros) + exponent;
  return magnitude > 0;
}

/// Scans a real value token ("1", "-2.5e3", "12.", ".5", "+1"). The token must end at a blank, a line
/// end or `end`. Out-of-range tiny values become +-0 (they are below every fp16 too); out-of-range
/// large values and inf/nan are refused because the fp16 conversion downstream would turn them into inf.
inline ValueScan scan_real(const char*& p, const char* end, double& out) noexcept {
  const char* b = p;
  // std::from_chars does not accept a leading '+', which Fortran writers emit.
  if (b < end && *b == '+' && b + 1 < end && *(b + 1) != '-' && *(b + 1) != '+') ++b;
  double v = 0.0;
  const auto [ptr, ec] = std::from_chars(b, end, v, std::chars_format::general);
  if (ptr == b || !at_token_end(ptr, end)) return ValueScan::not_a_number;
  if (ec == std::errc::result_out_of_range) {
    if (decimal_token_overflows(b, ptr)) return ValueScan::overflow;
    v = (*b == '-') ? -0.0 : 0.0;
  } else if (ec != std::errc()) {
    return ValueScan::not_a_number;
  }
  if (!std::isfinite(v)) return ValueScan::non_finite;
  out = v;
  p = ptr;
  return ValueScan::ok;
}

/// Scans an integer value token ("[+-]digits") into a double: integer files may hold values beyond
/// int64 (scipy's 2^63 tests); as doubles they round like any value above 2^53.
inline ValueScan scan_integer_value(const char*& p, const char* end, double& out) noexcept {
  const char* q = p;
  if (q < end && (*q == '+' || *q == '-')) ++q;
  const char* digits = q;
  while (q < end && static_cast<unsigned char>(*q - '0') <= 9) ++q;
  if (q == digits || !at_token_end(q, end)) return ValueScan::not_a_number;
  const char* b = (*p == '+') ? p + 1 : p;
  double v = 0.0;
  const auto [ptr, ec] = std::from_chars(b, q, v, std::chars_format::general);
  if (ec == std::errc::result_out_of_range) return ValueScan::overflow;  // more than ~308 digits
  if (ec != std::errc() || ptr != q) return ValueScan::not_a_number;
  out = v;
  p = q;
  return ValueScan::ok;
}

/// The token at `p` quoted for an error message: at most 40 characters, non-printable bytes escaped,
/// "end of line" / "end of file" when there is no token.
inline std::string quote_token(const char* p, const char* end) {
  if (p == end) return "end of file";
  if (is_line_end(*p)) return "end of line";
  std::string s = "'";
  int shown = 0;
  for (; p < end && !is_blank(*p) && !is_line_end(*p); ++p) {
    if (shown == 40) {
      s += "...";
      break;
    }
    const auto c = static_cast<unsigned char>(*p);
    if (c >= 0x20 && c < 0x7f) {
      s += static_cast<char>(c);
    } else {
      static const char* hex = "0123456789abcdef";
      s += "\\x";
      s += hex[c >> 4];
      s += hex[c & 15];
    }
    ++shown;
  }
  return s + "'";
}

/// Throws ParseError(name, line, problem). Out of line so the hot loops stay small.
[[noreturn]] void throw_parse_error(const std::string& name, std::int64_t line, const std::string& problem);

/// Throws SizeLimitError with the same "name:line: problem" text as a ParseError.
[[noreturn]] void throw_size_limit(const std::string& name, std::int64_t line, const std::string& problem);

}  // namespace bcsr24::io
