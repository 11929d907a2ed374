// The value lines of an array (dense, column-major) Matrix Market file, turned into CSR.
#pragma once

#include <cstddef>
#include <string>

#include "bcsr24/csr_matrix.hpp"
#include "io/mm_header.hpp"

namespace bcsr24::io {

/// Parses the values after `header` (data/size is the whole text) and returns the dense matrix as CSR
/// with every position stored, zeros included: the file lists each of them explicitly. Symmetric and
/// hermitian files list the lower triangle column by column; skew-symmetric ones the strictly lower
/// triangle (their diagonal is stored as explicit zeros).
/// @throw ParseError naming `name` and the line.
CsrMatrix parse_array_body(const char* data, std::size_t size, const MmHeader& header, const std::string& name);

}  // namespace bcsr24::io
