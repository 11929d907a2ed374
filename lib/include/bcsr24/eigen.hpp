// Header-only adapter: a SparseOperator from an Eigen::SparseMatrix (either storage order, any real scalar).
// Not included by bcsr24.hpp, so that users without Eigen never need its headers.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include <Eigen/SparseCore>

#include "bcsr24/error.hpp"
#include "bcsr24/sparse_operator.hpp"

namespace bcsr24 {

/// Builds a SparseOperator from an Eigen sparse matrix with `int` indices. A row-major compressed matrix with
/// double or float values is passed to from_csr without an extra copy; column-major, uncompressed or other
/// real scalar types are first converted to a compressed row-major double copy.
/// @param a the matrix (any size representable with 32-bit indices)
/// @param options conversion options
/// @throw SizeLimitError if a dimension exceeds 2^31 - 1; otherwise what SparseOperator::from_csr throws
///        (RangeError for non-finite values or values beyond fp16 range under ScalingPolicy::none).
template <typename Scalar, int StorageOptions>
SparseOperator from_eigen(const Eigen::SparseMatrix<Scalar, StorageOptions, int>& a,
                          const OperatorOptions& options = {}) {
  static_assert(std::is_arithmetic<Scalar>::value,
                "bcsr24::from_eigen needs a real scalar type (complex matrices are not supported)");
  constexpr Eigen::Index kMaxIndex = std::numeric_limits<std::int32_t>::max();
  if (a.rows() > kMaxIndex || a.cols() > kMaxIndex)
    throw SizeLimitError("bcsr24::from_eigen: " + std::to_string(a.rows()) + " x " + std::to_string(a.cols()) +
                         " exceeds 32-bit indices");
  const auto rows = static_cast<std::int32_t>(a.rows());
  const auto cols = static_cast<std::int32_t>(a.cols());
  if (rows == 0) {
    // Eigen may hold no outer index array at all for an empty outer dimension.
    const std::int32_t empty_row_ptr[1] = {0};
    return SparseOperator::from_csr(rows, cols, empty_row_ptr, nullptr, static_cast<const double*>(nullptr), options);
  }
  constexpr bool row_major = (StorageOptions & Eigen::RowMajorBit) != 0;
  constexpr bool direct_scalar = std::is_same<Scalar, double>::value || std::is_same<Scalar, float>::value;
  if constexpr (row_major && direct_scalar) {
    if (a.isCompressed())
      return SparseOperator::from_csr(rows, cols, a.outerIndexPtr(), a.innerIndexPtr(), a.valuePtr(), options);
  }
  // Eigen's storage-order conversion transposes the index structure and leaves it compressed and sorted.
  Eigen::SparseMatrix<double, Eigen::RowMajor, int> row_copy = a.template cast<double>();
  row_copy.makeCompressed();
  return SparseOperator::from_csr(rows, cols, row_copy.outerIndexPtr(), row_copy.innerIndexPtr(),
                                  row_copy.valuePtr(), options);
}

}  // namespace bcsr24
