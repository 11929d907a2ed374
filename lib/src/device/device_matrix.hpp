// DeviceMatrix (internal): the host matrix uploaded once to the current CUDA device. SparseOperator owns one;
// plans refer to it. Tests and the library reach it through detail::OperatorAccess.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "bcsr24/precision.hpp"
#include "format/bcsr24_matrix.hpp"

namespace bcsr24 {

/// Which bands a DeviceMatrix also keeps as CSR rows for the CUDA-core path.
enum class CsrCopy {
  none,        ///< no CSR rows: automatic plans use tiles only, csr_cuda_cores is refused
  candidates,  ///< the bands where the cost model predicts CSR faster at some n in 1..256 (default)
  all,         ///< every band (needed by csr_cuda_cores)
};

/// Which bands a DeviceMatrix also keeps as narrow vectors (format/band_vectors.hpp). A split-precision matrix
/// keeps none whatever is asked: it has no vector form.
enum class VectorCopy {
  none,        ///< no vectors: plans with vectors are refused
  candidates,  ///< the low-reuse bands (the CSR candidates: CsrCopy::candidates) whose vectors take at most 2.5x
               ///< their CSR bytes (default)
  all,         ///< every band (needed by BandPaths::vectors)
};

/// What a DeviceMatrix uploads besides the 2:4 and dense tile lists.
struct UploadOptions {
  CsrCopy csr = CsrCopy::candidates;
  VectorCopy vectors = VectorCopy::candidates;
};

/// The matrix uploaded once to the current CUDA device (RAII; move-only). Holds the 2:4 and dense lists, the
/// CSR rows of the bands that may run on CUDA cores and, when asked for, the narrow vectors.
class DeviceMatrix {
 public:
  /// @throw OutOfMemory when the lists do not fit in the device's free memory (checked before allocating, and
  ///        on a failed allocation); CudaError on copy failure; NotSupported without a device of sm_80 or newer.
  DeviceMatrix(const Bcsr24Matrix& host, const UploadOptions& options);
  ~DeviceMatrix();
  DeviceMatrix(DeviceMatrix&&) noexcept;
  DeviceMatrix& operator=(DeviceMatrix&&) noexcept;
  DeviceMatrix(const DeviceMatrix&) = delete;
  DeviceMatrix& operator=(const DeviceMatrix&) = delete;

  /// Adds CSR rows of every band (the csr_cuda_cores kernel) if not there yet, beside the candidate copy that
  /// existing plans use.
  void add_csr_of_every_band(const Bcsr24Matrix& host);
  /// Adds the narrow vectors of every band (BandPaths::vectors) if not there yet, beside the candidate copy.
  /// @throw InvalidArgument for a split-precision matrix (no vector form); OutOfMemory where they do not fit.
  void add_vectors_of_every_band(const Bcsr24Matrix& host);

  std::int32_t rows() const noexcept;
  std::int32_t cols() const noexcept;
  Precision precision() const noexcept;
  /// Bands with a CSR copy in the copy automatic plans use (0 .. tile rows).
  std::int32_t csr_bands() const noexcept;
  /// Bytes of device memory held.
  std::int64_t device_bytes() const noexcept;
  /// The CUDA device the matrix lives on (current at the upload).
  int device() const noexcept;
  /// Plans and added lists are allocated on the current device: they must be made where the matrix lives.
  /// @throw InvalidArgument naming `who` and both devices when another device is current.
  void require_current_device(const std::string& who) const;

  struct Impl;
  const Impl& impl() const noexcept { return *impl_; }

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace bcsr24
