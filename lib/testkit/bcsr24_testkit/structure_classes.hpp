// Matrices of the structure classes the cost model did not fit (issue 33): arrowheads, a few dense rows or columns,
// block-diagonal matrices, power-law graphs, very short and very long rows, tall least-squares matrices and
// banded circuit-like matrices of 3 nonzeros per row. Benchmarks name them "CLASS:ROWS[,key=value...]"
// (bench_spmm --synth), so the cost model's error can be measured per class (scripts/fit_cost_model.py).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bcsr24/csr_matrix.hpp"

namespace bcsr24 {

enum class StructureClass {
  arrowhead,       ///< row 0 and column 0 full, and the diagonal
  dense_rows,      ///< a random graph of `degree` per row plus `count` full rows spread over the matrix
  dense_cols,      ///< the same with `count` full columns
  block_diagonal,  ///< diagonal blocks of `block` x `block`, `degree` random entries per row inside its block
  power_law,       ///< a random graph whose row lengths follow a Pareto law of mean `degree` (synthetic.hpp)
  short_rows,      ///< rows of 1 .. `degree` entries in random columns (SpMV-like: next to no reuse of B)
  long_rows,       ///< every row `degree` random columns of `cols` (hundreds: one row fills many tiles)
  least_squares,   ///< tall: rows x cols with rows >> cols, `degree` random columns per row
  circuit,         ///< 3 entries per row: the diagonal and two random columns within `width` of it
};

/// Every class, in a fixed order (the gpu_check `model` step runs them all).
std::vector<StructureClass> all_structure_classes();
const char* structure_class_name(StructureClass kind) noexcept;
/// @throw InvalidArgument for an unknown name, listing the known ones.
StructureClass structure_class_from_name(const std::string& name);

struct StructureSpec {
  StructureClass kind = StructureClass::arrowhead;
  std::int32_t rows = 0;
  std::int32_t cols = 0;    ///< 0 = the class's default (rows; least_squares: rows / 27, as 72k x 2.7k)
  std::int32_t degree = 0;  ///< 0 = the class's default (see structure_spec_defaults)
  std::int32_t count = 0;   ///< dense rows or columns; 0 = 4
  std::int32_t block = 0;   ///< block_diagonal's block size; 0 = 64
  std::int32_t width = 0;   ///< circuit's half-bandwidth; 0 = 8 (a band's 48 entries fall in 1-2 tiles)
  std::uint64_t seed = 1;
};

/// The spec with every 0 replaced by the class's default: degree 8 (dense_rows, dense_cols, power_law),
/// block / 2 (block_diagonal), 2 (short_rows), 512 (long_rows), 4 (least_squares), 3 (arrowhead and circuit, which
/// have no degree parameter); count 4; block 64; width 8.
StructureSpec structure_spec_defaults(StructureSpec spec);

/// Generates the matrix: values uniform in [-1, 1) without zeros, columns sorted and distinct within a row;
/// reproducible from the seed.
/// @throw InvalidArgument for sizes or parameters the class cannot take (named in the message); SizeLimitError
///        beyond 2^31 - 1 nonzeros.
CsrMatrix generate_structure(const StructureSpec& spec);

/// Parses "CLASS:ROWS[,cols=C][,degree=D][,count=K][,block=B][,width=W][,seed=S]", e.g. "arrowhead:46500" or
/// "least_squares:72000,cols=2700". @throw InvalidArgument naming the bad part.
StructureSpec parse_structure_spec(const std::string& text);
/// A name for reports: the class and rows, with the parameters that differ from the defaults
/// ("arrowhead46500", "least_squares72000x2700_d4").
std::string structure_name(const StructureSpec& spec);

}  // namespace bcsr24
