// Structure-class matrices (structure_classes.hpp): each row's columns are drawn, sorted and given values.
#include "bcsr24_testkit/structure_classes.hpp"

#include <algorithm>
#include <climits>
#include <random>
#include <string>
#include <vector>

#include "bcsr24/error.hpp"
#include "bcsr24_testkit/synthetic.hpp"
#include "random_values.hpp"
#include "spec_text.hpp"

namespace bcsr24 {

namespace {

struct ClassName {
  StructureClass kind;
  const char* name;
};
constexpr ClassName kNames[] = {
    {StructureClass::arrowhead, "arrowhead"},       {StructureClass::dense_rows, "dense_rows"},
    {StructureClass::dense_cols, "dense_cols"},     {StructureClass::block_diagonal, "block_diagonal"},
    {StructureClass::power_law, "power_law"},       {StructureClass::short_rows, "short_rows"},
    {StructureClass::long_rows, "long_rows"},       {StructureClass::least_squares, "least_squares"},
    {StructureClass::circuit, "circuit"},
};

/// `count` distinct columns of [lo, hi), appended to `out` (unsorted): selection sampling where they are a large
/// share of the range, rejection otherwise.
void draw_columns(std::mt19937_64& rng, std::int64_t count, std::int32_t lo, std::int32_t hi,
                  std::vector<std::int32_t>& out) {
  const std::int64_t range = std::int64_t(hi) - lo;
  if (count * 4 > range) {
    std::int64_t left = count;
    for (std::int32_t c = lo; c < hi && left > 0; ++c)
      if (std::int64_t(detail::uniform_below(rng, std::uint64_t(hi - c))) < left) {
        out.push_back(c);
        --left;
      }
    return;
  }
  const std::size_t first = out.size();
  while (std::int64_t(out.size() - first) < count) {
    const auto c = static_cast<std::int32_t>(lo + std::int64_t(detail::uniform_below(rng, std::uint64_t(range))));
    if (std::find(out.begin() + std::ptrdiff_t(first), out.end(), c) == out.end()) out.push_back(c);
  }
}

/// Builds the CSR matrix row by row from `columns_of(r, out)`, which appends row r's columns (any order, may repeat).
template <typename Columns>
CsrMatrix build(std::int32_t rows, std::int32_t cols, std::mt19937_64& rng, Columns columns_of) {
  CsrMatrix a;
  a.rows = rows;
  a.cols = cols;
  a.row_ptr.assign(std::size_t(rows) + 1, 0);
  std::vector<std::int32_t> row;
  for (std::int32_t r = 0; r < rows; ++r) {
    row.clear();
    columns_of(r, row);
    std::sort(row.begin(), row.end());
    row.erase(std::unique(row.begin(), row.end()), row.end());
    if (std::int64_t(a.col_idx.size()) + std::int64_t(row.size()) > INT32_MAX)
      throw SizeLimitError("generate_structure: more than 2^31 - 1 nonzeros");
    for (const std::int32_t c : row) {
      a.col_idx.push_back(c);
      a.values.push_back(detail::uniform_nonzero(rng));
    }
    a.row_ptr[std::size_t(r) + 1] = static_cast<std::int32_t>(a.col_idx.size());
  }
  return a;
}

std::string spec_error(const StructureSpec& spec, const std::string& why) {
  return std::string("generate_structure: ") + structure_class_name(spec.kind) + " " + why;
}

}  // namespace

std::vector<StructureClass> all_structure_classes() {
  std::vector<StructureClass> out;
  for (const ClassName& c : kNames) out.push_back(c.kind);
  return out;
}

const char* structure_class_name(StructureClass kind) noexcept {
  for (const ClassName& c : kNames)
    if (c.kind == kind) return c.name;
  return "?";
}

StructureClass structure_class_from_name(const std::string& name) {
  std::string known;
  for (const ClassName& c : kNames) {
    if (name == c.name) return c.kind;
    known += known.empty() ? c.name : std::string(", ") + c.name;
  }
  throw InvalidArgument("unknown structure class '" + name + "' (expected one of " + known + ")");
}

StructureSpec structure_spec_defaults(StructureSpec spec) {
  if (spec.count == 0) spec.count = 4;
  if (spec.block == 0) spec.block = 64;
  if (spec.width == 0) spec.width = 8;
  if (spec.cols == 0) spec.cols = spec.kind == StructureClass::least_squares ? std::max(1, spec.rows / 27) : spec.rows;
  if (spec.degree == 0) switch (spec.kind) {
      case StructureClass::block_diagonal: spec.degree = std::max(1, spec.block / 2); break;
      case StructureClass::short_rows: spec.degree = 2; break;
      case StructureClass::long_rows: spec.degree = 512; break;
      case StructureClass::least_squares: spec.degree = 4; break;
      case StructureClass::arrowhead:
      case StructureClass::circuit: spec.degree = 3; break;  // not a parameter of these: what they have
      default: spec.degree = 8; break;
    }
  return spec;
}

CsrMatrix generate_structure(const StructureSpec& given) {
  const StructureSpec spec = structure_spec_defaults(given);
  const std::int32_t rows = spec.rows, cols = spec.cols;
  if (rows < 1 || cols < 1)
    throw InvalidArgument(spec_error(spec, "needs rows, cols >= 1; got " + std::to_string(rows) + " x " +
                                               std::to_string(cols)));
  if (spec.degree < 1 || spec.count < 1 || spec.block < 1 || spec.width < 1)
    throw InvalidArgument(spec_error(spec, "needs degree, count, block and width >= 1"));
  const bool square = spec.kind == StructureClass::arrowhead || spec.kind == StructureClass::block_diagonal ||
                      spec.kind == StructureClass::circuit;
  if (square && cols != rows)
    throw InvalidArgument(spec_error(spec, "is square; got cols = " + std::to_string(cols) + " for " +
                                               std::to_string(rows) + " rows"));
  std::mt19937_64 rng(spec.seed);
  switch (spec.kind) {
    case StructureClass::arrowhead:
      return build(rows, cols, rng, [&](std::int32_t r, std::vector<std::int32_t>& out) {
        if (r == 0) {
          for (std::int32_t c = 0; c < cols; ++c) out.push_back(c);
        } else {
          out.push_back(0);
          out.push_back(r);
        }
      });
    case StructureClass::dense_rows:
    case StructureClass::dense_cols: {
      if (spec.degree > cols) throw InvalidArgument(spec_error(spec, "degree exceeds cols"));
      const bool by_row = spec.kind == StructureClass::dense_rows;
      const std::int32_t extent = by_row ? rows : cols;
      if (spec.count > extent) throw InvalidArgument(spec_error(spec, "count exceeds the rows or columns"));
      // Spread evenly: the k-th at the middle of the k-th of `count` equal stretches.
      std::vector<std::int32_t> full;
      for (std::int32_t k = 0; k < spec.count; ++k)
        full.push_back(static_cast<std::int32_t>((2 * std::int64_t(k) + 1) * extent / (2 * std::int64_t(spec.count))));
      return build(rows, cols, rng, [&](std::int32_t r, std::vector<std::int32_t>& out) {
        if (by_row && std::binary_search(full.begin(), full.end(), r)) {
          for (std::int32_t c = 0; c < cols; ++c) out.push_back(c);
          return;
        }
        draw_columns(rng, spec.degree, 0, cols, out);
        if (!by_row) out.insert(out.end(), full.begin(), full.end());
      });
    }
    case StructureClass::block_diagonal:
      return build(rows, cols, rng, [&](std::int32_t r, std::vector<std::int32_t>& out) {
        const std::int32_t lo = r / spec.block * spec.block;
        const std::int32_t hi = static_cast<std::int32_t>(std::min<std::int64_t>(cols, std::int64_t(lo) + spec.block));
        draw_columns(rng, std::min<std::int64_t>(spec.degree, hi - lo), lo, hi, out);
      });
    case StructureClass::power_law: {
      RandomGraphSpec graph;
      graph.rows = rows;
      graph.cols = cols;
      graph.degree = spec.degree;
      graph.power_law = true;
      graph.seed = spec.seed;
      return generate_random_graph(graph);
    }
    case StructureClass::short_rows:
    case StructureClass::long_rows:
    case StructureClass::least_squares: {
      if (spec.degree > cols) throw InvalidArgument(spec_error(spec, "degree exceeds cols"));
      const bool varying = spec.kind == StructureClass::short_rows;
      return build(rows, cols, rng, [&](std::int32_t, std::vector<std::int32_t>& out) {
        const std::int64_t length =
            varying ? 1 + std::int64_t(detail::uniform_below(rng, std::uint64_t(spec.degree))) : spec.degree;
        draw_columns(rng, length, 0, cols, out);
      });
    }
    case StructureClass::circuit: {
      if (spec.width < 2 || rows < 3) throw InvalidArgument(spec_error(spec, "needs width >= 2 and rows >= 3"));
      return build(rows, cols, rng, [&](std::int32_t r, std::vector<std::int32_t>& out) {
        const std::int32_t lo = std::max(0, r - spec.width);
        const std::int32_t hi = static_cast<std::int32_t>(std::min<std::int64_t>(cols, std::int64_t(r) + spec.width + 1));
        out.push_back(r);
        // Two more distinct columns of the window, not the diagonal: rejection (the window has >= 2 others).
        while (out.size() < 3) {
          const auto c = static_cast<std::int32_t>(lo + std::int64_t(detail::uniform_below(rng, std::uint64_t(hi - lo))));
          if (std::find(out.begin(), out.end(), c) == out.end()) out.push_back(c);
        }
      });
    }
  }
  throw InvalidArgument("generate_structure: unknown class");
}

StructureSpec parse_structure_spec(const std::string& text) {
  const detail::SpecText spec_text("structure spec", text,
                                   "CLASS:ROWS[,cols=C][,degree=D][,count=K][,block=B][,width=W][,seed=S]");
  const std::size_t colon = text.find(':');
  if (colon == std::string::npos) throw spec_text.fail("no ':' after the class");
  StructureSpec spec;
  spec.kind = structure_class_from_name(text.substr(0, colon));
  const std::vector<std::string> parts = spec_text.parts(colon + 1);
  spec.rows = spec_text.rows(parts[0]);
  for (std::size_t i = 1; i < parts.size(); ++i) {
    const std::string& part = parts[i];
    const std::size_t eq = part.find('=');
    if (eq == std::string::npos) throw spec_text.fail("'" + part + "' is not key=value");
    const std::string key = part.substr(0, eq), value = part.substr(eq + 1);
    if (key == "seed") {
      spec.seed = static_cast<std::uint64_t>(spec_text.integer(value, "seed"));
      continue;
    }
    const std::int64_t v = spec_text.integer(value, key);
    if (v < 1 || v > INT32_MAX) throw spec_text.fail(key + " must be in 1 .. 2^31 - 1");
    if (key == "cols") spec.cols = static_cast<std::int32_t>(v);
    else if (key == "degree") spec.degree = static_cast<std::int32_t>(v);
    else if (key == "count") spec.count = static_cast<std::int32_t>(v);
    else if (key == "block") spec.block = static_cast<std::int32_t>(v);
    else if (key == "width") spec.width = static_cast<std::int32_t>(v);
    else throw spec_text.fail("unknown part '" + part + "'");
  }
  return spec;
}

std::string structure_name(const StructureSpec& given) {
  const StructureSpec spec = structure_spec_defaults(given);
  StructureSpec plain;
  plain.kind = spec.kind;
  plain.rows = spec.rows;
  plain = structure_spec_defaults(plain);
  std::string name = std::string(structure_class_name(spec.kind)) + std::to_string(spec.rows);
  if (spec.cols != spec.rows) name += "x" + std::to_string(spec.cols);
  if (spec.degree != plain.degree) name += "_d" + std::to_string(spec.degree);
  if (spec.count != plain.count) name += "_k" + std::to_string(spec.count);
  if (spec.block != plain.block) name += "_b" + std::to_string(spec.block);
  if (spec.width != plain.width) name += "_w" + std::to_string(spec.width);
  return name;
}

}  // namespace bcsr24
