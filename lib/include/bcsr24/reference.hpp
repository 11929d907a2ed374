// The CPU reference product: the oracle every kernel is tested against, and the path that runs without a GPU.
#pragma once

#include <cstdint>

#include "bcsr24/half.hpp"
#include "bcsr24/sparse_operator.hpp"

namespace bcsr24 {

/// C = alpha * A * B + beta * C on the host, with A the operator's stored matrix (each value in its precision,
/// split as hi + 2^-11 lo, times its power-of-two scale: what the GPU kernels multiply by), B a 16-bit row-major
/// cols(A) x n matrix (leading dimension ldb) in the matrix's own 16-bit type as SpmmPlan::run takes it (bf16 bits
/// for a bf16 matrix, fp16 bits otherwise), C a float row-major rows(A) x n matrix (ldc). Accumulates in double,
/// so it differs from a GPU product only by the GPU's fp32 accumulation. beta == 0 overwrites C without reading
/// it (NaN in C does not propagate). Single-threaded, O(stored tiles x 512 x n): for checks and small problems.
/// @throw InvalidArgument for n < 1, leading dimensions smaller than n, or null pointers with non-empty data.
void reference_spmm(const SparseOperator& a, std::int32_t n, const fp16_t* b, std::int64_t ldb, float* c,
                    std::int64_t ldc, double alpha, double beta);
/// The same with an fp32 B (used exactly, in double): the reference for the fp32-B products.
void reference_spmm(const SparseOperator& a, std::int32_t n, const float* b, std::int64_t ldb, float* c,
                    std::int64_t ldc, double alpha, double beta);

}  // namespace bcsr24
