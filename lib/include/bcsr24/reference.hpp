// CPU reference product on the host format: decodes tiles exactly as the kernels see them.
#pragma once

#include <cstdint>

#include "bcsr24/bcsr24_matrix.hpp"

namespace bcsr24 {

/// C = alpha * A * B + beta * C with A the preprocessed matrix (its fp16 values times 2^scale), B an fp16
/// row-major K x n matrix (leading dimension ldb), C a float row-major M x n matrix (ldc). Accumulates in
/// double. beta == 0 overwrites C without reading it (NaN in C does not propagate).
/// @throw InvalidArgument for n < 1 or leading dimensions smaller than n.
void reference_spmm(const Bcsr24Matrix& a, std::int32_t n, const fp16_t* b, std::int64_t ldb, float* c,
                    std::int64_t ldc, double alpha, double beta);

}  // namespace bcsr24
