// CPU reference product on the host format (internal): decodes tiles exactly as the kernels see them. The public
// form, on a SparseOperator, is bcsr24/reference.hpp.
#pragma once

#include <cstdint>

#include "format/bcsr24_matrix.hpp"

namespace bcsr24 {

/// C = alpha * A * B + beta * C with A the preprocessed matrix (its stored values decoded in its precision,
/// split as hi + 2^-11 lo, each row times 2^exponent_of_row), B a 16-bit row-major K x n matrix (bf16 bits for a
/// bf16 matrix, fp16 bits otherwise; leading
/// dimension ldb), C a float row-major M x n matrix (ldc). Accumulates in double. beta == 0 overwrites C
/// without reading it (NaN in C does not propagate).
/// @throw InvalidArgument for n < 1 or leading dimensions smaller than n.
void reference_spmm(const Bcsr24Matrix& a, std::int32_t n, const fp16_t* b, std::int64_t ldb, float* c,
                    std::int64_t ldc, double alpha, double beta);

/// The same with an fp32 B (used exactly, in double): the reference for the fp32-B products (Precision::split).
/// @throw InvalidArgument for n < 1 or leading dimensions smaller than n.
void reference_spmm(const Bcsr24Matrix& a, std::int32_t n, const float* b, std::int64_t ldb, float* c,
                    std::int64_t ldc, double alpha, double beta);

}  // namespace bcsr24
