// CPU reference product on the host format (internal): decodes tiles exactly as the kernels see them. The public
// form, on a SparseOperator, is bcsr24/reference.hpp.
#pragma once

#include <cstdint>

#include "format/bcsr24_matrix.hpp"

namespace bcsr24 {

/// reference_spmm of bcsr24/reference.hpp on the host format itself (A's rows scaled by 2^exponent_of_row): the
/// arguments, the arithmetic and the errors are as documented there. BElement: fp16_t (the matrix's own 16-bit type:
/// bf16 bits for a bf16 matrix, fp16 bits otherwise) or float (used exactly); reference.cpp instantiates those two.
template <typename BElement>
void reference_spmm(const Bcsr24Matrix& a, std::int32_t n, const BElement* b, std::int64_t ldb, float* c,
                    std::int64_t ldc, double alpha, double beta);

}  // namespace bcsr24
