// Matrix Market (.mtx, .mtx.gz) reader and writer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "bcsr24/csr_matrix.hpp"

namespace bcsr24 {

/// What the banner and size line said.
struct MatrixMarketInfo {
  std::string format = "coordinate";  ///< "coordinate" or "array"
  std::string field = "real";         ///< "real", "double", "integer", "pattern" (complex files are refused)
  std::string symmetry = "general";   ///< "general", "symmetric", "skew-symmetric" or "hermitian"
  std::int64_t rows = 0;
  std::int64_t cols = 0;
  std::int64_t entries = 0;  ///< entries listed in the file (before symmetric expansion)
};

/// How the reader fills the values of pattern files (which list positions only).
struct MatrixMarketOptions {
  enum class PatternValues {
    ones,   ///< every pattern entry becomes 1.0
    random  ///< uniform in [-1, 1), reproducible from `seed`
  };
  PatternValues pattern_values = PatternValues::ones;
  std::uint64_t seed = 1;
};

/// Reads a Matrix Market file (plain, or gzip when the content is gzip-compressed).
/// Symmetric, skew-symmetric and hermitian-on-real files are expanded; duplicates are summed.
/// @throw ParseError (file, 1-based line, problem) for malformed content and for what the reader refuses on purpose
///        (complex fields, vector objects); SizeLimitError when dims/nnz exceed 32-bit indices.
CsrMatrix read_matrix_market(const std::string& path, const MatrixMarketOptions& options = {},
                             MatrixMarketInfo* info = nullptr);

/// Same, from bytes in memory (plain, or gzip told by its magic bytes); `name` is used in error messages.
CsrMatrix read_matrix_market_from_memory(const char* data, std::size_t size, const std::string& name,
                                         const MatrixMarketOptions& options = {},
                                         MatrixMarketInfo* info = nullptr);

/// Writes a general real coordinate file (values with 17 significant digits, so they read back exactly).
/// @throw Error if the file cannot be written.
void write_matrix_market(const std::string& path, const CsrMatrix& a);

}  // namespace bcsr24
