// Parses coordinate entry lines (hand-rolled scanner, std::from_chars values) on one or more threads.
#include "io/mm_coordinate_body.hpp"

#include <algorithm>
#include <exception>
#include <limits>
#include <thread>

#include "bcsr24/error.hpp"
#include "bcsr24_testkit/splitmix64.hpp"
#include "io/mm_text.hpp"

namespace bcsr24::io {

namespace {

constexpr std::int64_t kMaxNnz = std::numeric_limits<std::int32_t>::max();
/// Below this body size one thread is fast enough and threads would only add start-up cost.
constexpr std::size_t kParallelMinBytes = std::size_t{16} << 20;
/// Each thread should get at least this much text to amortise its start and the final concatenation.
constexpr std::size_t kBytesPerThread = std::size_t{8} << 20;
constexpr unsigned kMaxThreads = 8;
/// The shortest entry line is "1 1\n": no body of b bytes holds more than b / 4 + 1 entries. Reserving by
/// this bound (never by the size line alone) keeps a lying size line from allocating gigabytes.
constexpr std::size_t kMinEntryBytes = 4;

enum class ValueKind { none, real, integer };
enum class SymmetryKind { general, symmetric, skew };
enum class Triangle { unknown, lower, upper };

struct Context {
  const std::string* name;
  const char* data;  ///< the whole text, to tell the last line at end of input
  std::size_t size;
  std::int64_t rows;
  std::int64_t cols;
  std::int64_t declared;   ///< entries on the size line
  std::int64_t size_line;  ///< its line number
};

/// Triplets of one stretch of the body, plus what the symmetry checks need to know about it.
struct Chunk {
  Triplets t;
  std::int64_t diagonal = 0;
  Triangle triangle = Triangle::unknown;
};

std::string value_problem(ValueScan s, const char* tok, const char* end) {
  switch (s) {
    case ValueScan::overflow:
      return "value " + quote_token(tok, end) + " is beyond the double range";
    case ValueScan::non_finite:
      return "value " + quote_token(tok, end) + " is not finite (inf and nan are refused)";
    default:
      return "expected a numeric value, found " + quote_token(tok, end);
  }
}

std::string index_problem(const char* what, const char* tok, const char* end, std::int64_t limit) {
  return std::string(what) + " index " + quote_token(tok, end) + " is out of range [1, " + std::to_string(limit) + "]";
}

/// The hot loop. Parses entry lines in [p, end), numbering lines from `line`, stopping with an error at
/// the (max_entries + 1)-th entry. Templated on what varies per file so the per-entry work has no
/// run-time switches.
template <ValueKind kValue, SymmetryKind kSymmetry>
void parse_entries(const char* p, const char* end, std::int64_t line, const Context& ctx, std::int64_t max_entries,
                   Chunk& out) {
  const std::string& name = *ctx.name;
  std::int64_t count = 0;
  while (true) {
    p = skip_blanks(p, end);
    if (p == end) break;
    const char c = *p;
    if (c == '\n') {
      ++p;
      ++line;
      continue;
    }
    if (c == '\r') {
      p = skip_line_end(p, end);
      ++line;
      continue;
    }
    if (c == '%') {  // comment lines are tolerated between entries too
      p = find_line_end(p, end);
      continue;
    }
    if (count == max_entries)
      throw_parse_error(name, line,
                        "more entries than the " + std::to_string(ctx.declared) + " declared on the size line (line " +
                            std::to_string(ctx.size_line) + ")");
    const char* row_tok = p;
    std::int64_t r = 0;
    if (!scan_int(p, end, r) || !at_token_end(p, end))
      throw_parse_error(name, line, "expected a row index, found " + quote_token(row_tok, end));
    p = skip_blanks(p, end);
    const char* col_tok = p;
    std::int64_t k = 0;
    if (!scan_int(p, end, k) || !at_token_end(p, end))
      throw_parse_error(name, line, "expected a column index, found " + quote_token(col_tok, end));
    if (r < 1 || r > ctx.rows) throw_parse_error(name, line, index_problem("row", row_tok, end, ctx.rows));
    if (k < 1 || k > ctx.cols) throw_parse_error(name, line, index_problem("column", col_tok, end, ctx.cols));
    double v = 0.0;
    if constexpr (kValue != ValueKind::none) {
      p = skip_blanks(p, end);
      const char* value_tok = p;
      const ValueScan s = kValue == ValueKind::real ? scan_real(p, end, v) : scan_integer_value(p, end, v);
      if (s != ValueScan::ok) throw_parse_error(name, line, value_problem(s, value_tok, end));
    }
    p = skip_blanks(p, end);
    if (p < end && !is_line_end(*p))
      throw_parse_error(name, line,
                        "unexpected " + quote_token(p, end) + " after the entry; entries of this file have " +
                            (kValue == ValueKind::none ? "2 fields (row column)" : "3 fields (row column value)"));
    if constexpr (kSymmetry != SymmetryKind::general) {
      if (r == k) {
        if constexpr (kSymmetry == SymmetryKind::skew)
          throw_parse_error(name, line,
                            "diagonal entry (" + std::to_string(r) + ", " + std::to_string(r) +
                                ") in a skew-symmetric file: only the strictly lower triangle is stored");
        ++out.diagonal;
      } else {
        // NIST stores the lower triangle; files storing the upper one are mirrored just as well, but a
        // file with entries on both sides is refused: mirroring it would double-count the pairs.
        const Triangle side = r > k ? Triangle::lower : Triangle::upper;
        if (out.triangle == Triangle::unknown) {
          out.triangle = side;
        } else if (out.triangle != side) {
          throw_parse_error(name, line,
                            "entry (" + std::to_string(r) + ", " + std::to_string(k) + ") is " +
                                (side == Triangle::upper ? "above" : "below") + " the diagonal but earlier entries are " +
                                (side == Triangle::upper ? "below" : "above") +
                                " it: a symmetric file must store one triangle only");
        }
      }
    }
    out.t.row.push_back(static_cast<std::int32_t>(r - 1));
    out.t.col.push_back(static_cast<std::int32_t>(k - 1));
    if constexpr (kValue != ValueKind::none) out.t.value.push_back(v);
    ++count;
  }
  if (max_entries == ctx.declared && count < ctx.declared) {
    const std::int64_t last = (ctx.size > 0 && is_line_end(ctx.data[ctx.size - 1]) && line > 1) ? line - 1 : line;
    throw_parse_error(name, last,
                      "expected " + std::to_string(ctx.declared) + " entries (size line " +
                          std::to_string(ctx.size_line) + "), found only " + std::to_string(count));
  }
}

using EntryParser = void (*)(const char*, const char*, std::int64_t, const Context&, std::int64_t, Chunk&);

template <ValueKind kValue>
EntryParser select_for_value(SymmetryKind s) {
  switch (s) {
    case SymmetryKind::general:
      return &parse_entries<kValue, SymmetryKind::general>;
    case SymmetryKind::symmetric:
      return &parse_entries<kValue, SymmetryKind::symmetric>;
    default:
      return &parse_entries<kValue, SymmetryKind::skew>;
  }
}

EntryParser select_parser(const MmBanner& info) {
  // Hermitian on a real-valued field is symmetric (the conjugate of a real number is itself).
  const SymmetryKind s = info.symmetry == MmSymmetry::general          ? SymmetryKind::general
                         : info.symmetry == MmSymmetry::skew_symmetric ? SymmetryKind::skew
                                                                       : SymmetryKind::symmetric;
  switch (info.field) {
    case MmField::pattern:
      return select_for_value<ValueKind::none>(s);
    case MmField::integer:
      return select_for_value<ValueKind::integer>(s);
    default:
      return select_for_value<ValueKind::real>(s);
  }
}

void reserve_entries(Chunk& c, std::size_t n, bool with_values) {
  c.t.row.reserve(n);
  c.t.col.reserve(n);
  if (with_values) c.t.value.reserve(n);
}

/// Start offsets (relative to `body`) of up to `parts` stretches, each beginning at a line start.
std::vector<std::size_t> split_at_lines(const char* body, std::size_t size, unsigned parts) {
  std::vector<std::size_t> starts{0};
  for (unsigned i = 1; i < parts; ++i) {
    std::size_t pos = std::max(starts.back(), size / parts * i);
    while (pos < size && !is_line_end(body[pos])) ++pos;
    // Never split a "\r\n" pair: step over the whole terminator.
    pos = static_cast<std::size_t>(skip_line_end(body + pos, body + size) - body);
    if (pos >= size) break;
    if (pos > starts.back()) starts.push_back(pos);
  }
  return starts;
}

/// Parses the body on several threads. Returns false when the sequential parse must decide (an error in
/// a chunk, a count that differs from the size line, or triangles that disagree between chunks).
bool parse_in_parallel(const char* body, std::size_t body_size, const Context& ctx, EntryParser parser, bool values,
                       unsigned threads, std::size_t final_capacity, Chunk& result) {
  const std::vector<std::size_t> starts = split_at_lines(body, body_size, threads);
  const std::size_t parts = starts.size();
  std::vector<Chunk> chunks(parts);
  std::vector<char> failed(parts, 0);
  auto work = [&](std::size_t i) {
    try {
      const std::size_t b = starts[i];
      const std::size_t e = i + 1 < parts ? starts[i + 1] : body_size;
      // Expected share of the declared entries, capped by what the bytes can hold.
      const double share = static_cast<double>(e - b) / static_cast<double>(body_size);
      const auto guess = static_cast<std::size_t>(static_cast<double>(ctx.declared) * share * 1.05) + 1024;
      // Chunk 0 becomes the result: give it room for everything, so appending the others never reallocates
      // (reserved pages that are never written cost nothing).
      reserve_entries(chunks[i], i == 0 ? final_capacity : std::min(guess, (e - b) / kMinEntryBytes + 1), values);
      // Line numbers inside a chunk are not known (and not needed): errors are re-derived sequentially.
      parser(body + b, body + e, 0, ctx, std::numeric_limits<std::int64_t>::max(), chunks[i]);
    } catch (...) {
      failed[i] = 1;
    }
  };
  std::vector<std::thread> pool;
  for (std::size_t i = 1; i < parts; ++i) pool.emplace_back(work, i);
  work(0);
  for (auto& t : pool) t.join();

  std::int64_t total = 0;
  Triangle triangle = Triangle::unknown;
  for (std::size_t i = 0; i < parts; ++i) {
    if (failed[i]) return false;
    total += static_cast<std::int64_t>(chunks[i].t.row.size());
    if (chunks[i].triangle != Triangle::unknown) {
      if (triangle != Triangle::unknown && triangle != chunks[i].triangle) return false;
      triangle = chunks[i].triangle;
    }
  }
  if (total != ctx.declared) return false;

  result = std::move(chunks[0]);
  const auto n = static_cast<std::size_t>(total);
  result.t.row.reserve(n);
  result.t.col.reserve(n);
  if (values) result.t.value.reserve(n);
  for (std::size_t i = 1; i < parts; ++i) {
    const Triplets& t = chunks[i].t;
    result.t.row.insert(result.t.row.end(), t.row.begin(), t.row.end());
    result.t.col.insert(result.t.col.end(), t.col.begin(), t.col.end());
    result.t.value.insert(result.t.value.end(), t.value.begin(), t.value.end());
    result.diagonal += chunks[i].diagonal;
    chunks[i] = Chunk{};  // free as we go: the peak stays near one copy of the triplets
  }
  result.triangle = triangle;
  return true;
}

unsigned thread_count(std::size_t body_size) {
  if (body_size < kParallelMinBytes) return 1;
  const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
  const auto by_size = static_cast<unsigned>(std::min<std::size_t>(body_size / kBytesPerThread, kMaxThreads));
  return std::max(1u, std::min({hw, by_size, kMaxThreads}));
}

}  // namespace

double pattern_random_value(std::uint64_t seed, std::uint64_t k) noexcept {
  // Element k of the seeded splitmix64 stream: cheap, well mixed, and independent of how entries are split
  // among threads.
  return splitmix64_symmetric_unit(splitmix64_at(seed, k));
}

Triplets parse_coordinate_body(const char* data, std::size_t size, const MmHeader& header, const std::string& name,
                               const MatrixMarketOptions& options) {
  const MmBanner& info = header.info;
  const Context ctx{&name, data, size, info.rows, info.cols, info.entries, header.size_line};
  const EntryParser parser = select_parser(info);
  const bool pattern = info.field == MmField::pattern;
  const char* body = data + header.body_offset;
  const std::size_t body_size = size - header.body_offset;

  // Room for the listed entries (bounded by what the bytes can hold) and, for symmetric kinds, their
  // mirrors, so that neither the chunk concatenation nor the mirroring reallocates.
  const std::size_t listed_bound = std::min(static_cast<std::size_t>(info.entries), body_size / kMinEntryBytes + 1);
  const std::size_t capacity = info.symmetry == MmSymmetry::general ? listed_bound : 2 * listed_bound;
  Chunk chunk;
  const unsigned threads = thread_count(body_size);
  if (threads < 2 || !parse_in_parallel(body, body_size, ctx, parser, !pattern, threads, capacity, chunk)) {
    chunk = Chunk{};
    reserve_entries(chunk, capacity, !pattern);
    parser(body, data + size, header.body_first_line, ctx, info.entries, chunk);
  }

  Triplets& t = chunk.t;
  const std::size_t listed = t.row.size();
  if (pattern) {
    t.value.reserve(capacity);
    t.value.resize(listed);
    for (std::size_t k = 0; k < listed; ++k)
      t.value[k] = options.pattern_values == MatrixMarketOptions::PatternValues::random ? pattern_random_value(options.seed, k) : 1.0;
  }
  if (info.symmetry == MmSymmetry::general) return std::move(t);

  // Mirror every off-diagonal entry. Checked before growing: the expanded count must fit int32 nnz.
  const std::int64_t off_diagonal = static_cast<std::int64_t>(listed) - chunk.diagonal;
  const std::int64_t expanded = static_cast<std::int64_t>(listed) + off_diagonal;
  if (expanded > kMaxNnz)
    throw_size_limit(name, header.size_line,
                     "the " + std::to_string(listed) + " entries expand to " + std::to_string(expanded) +
                         " after mirroring the symmetric part, beyond the 32-bit limit 2147483647");
  const double sign = info.symmetry == MmSymmetry::skew_symmetric ? -1.0 : 1.0;
  const auto n = static_cast<std::size_t>(expanded);
  t.row.reserve(n);
  t.col.reserve(n);
  t.value.reserve(n);
  for (std::size_t k = 0; k < listed; ++k) {
    if (t.row[k] == t.col[k]) continue;
    t.row.push_back(t.col[k]);
    t.col.push_back(t.row[k]);
    t.value.push_back(sign * t.value[k]);
  }
  return std::move(t);
}

}  // namespace bcsr24::io
