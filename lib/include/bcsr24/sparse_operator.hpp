// SparseOperator: the one-object entry point: build once from a file, CSR arrays or Eigen, upload once,
// multiply many times through SpmmPlan.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "bcsr24/bcsr24_matrix.hpp"
#include "bcsr24/convert.hpp"
#include "bcsr24/csr_matrix.hpp"
#include "bcsr24/device.hpp"
#include "bcsr24/matrix_market.hpp"

namespace bcsr24 {

/// Choices fixed when a SparseOperator is built.
struct OperatorOptions {
  /// Precision (fp16 / bf16 / split), scaling policy (per row by default), host threads, tile layout
  /// (aligned / condensed / automatic) and row reordering (none / rcm / automatic) of the conversion (see
  /// convert.hpp, precision.hpp).
  ConvertOptions convert;
  /// How from_file() fills pattern files (ones or seeded random values).
  MatrixMarketOptions matrix_market;
  /// Also upload every tile as a dense tile, which the dense_bt and dense_pipelined kernels need. Off by
  /// default: the default kernel (auto) does not use it and it costs up to twice the device memory.
  bool upload_merged_dense = false;
  /// Which bands also get CSR rows for the CUDA-core path: candidates (default: the bands where the cost model
  /// predicts CSR faster at some n; auto plans choose among them), all (needed by the csr_cuda_cores kernel)
  /// or none (auto plans then run tiles only).
  CsrCopy csr_copy = CsrCopy::candidates;
};

/// A sparse matrix A preprocessed into BCSR-2:4 on the host (tile census, fp16 scaling) and uploaded once to
/// a CUDA device, ready for C = alpha * A * B + beta * C with tall-skinny B.
///
/// Lifetime: build with from_file / from_csr / from_eigen (eigen.hpp); the device copy is made by upload(),
/// or by the first make_plan() or device() call, on the CUDA device current on the calling thread at that
/// moment. Plans made from an operator refer to its device copy: the operator must outlive them (moving
/// the operator keeps them valid; destroying it does not).
///
/// Thread safety: every const member function may be called concurrently from several threads, including
/// the first upload (it is serialised internally). A SpmmPlan must be used by one thread at a time; make one
/// plan per thread or stream. Moving, assigning or destroying an operator must not race with any other use;
/// a moved-from operator may only be assigned to or destroyed.
class SparseOperator {
 public:
  /// Reads a Matrix Market file (.mtx, or gzip content) or a preprocessed .b24 file (by extension), then
  /// converts it. For .b24 files, options.convert and options.matrix_market are not used.
  /// @param path file to read
  /// @param options conversion and reader options
  /// @throw ParseError / UnsupportedMatrixError for a malformed or complex Matrix Market file (with line);
  ///        FileFormatError for a bad .b24 file; SizeLimitError beyond 32-bit indices;
  ///        RangeError if values exceed fp16 range under ScalingPolicy::none.
  static SparseOperator from_file(const std::string& path, const OperatorOptions& options = {});

  /// Builds from CSR arrays in host memory (0-based, 32-bit indices); the arrays are copied and may be
  /// freed after the call. Columns within a row may come in any order; duplicate columns are summed.
  /// Explicit zeros are accepted and not stored.
  /// @param rows number of rows, >= 0
  /// @param cols number of columns, >= 0
  /// @param row_ptr rows + 1 non-decreasing offsets with row_ptr[0] == 0; nnz = row_ptr[rows]
  /// @param col_idx nnz column indices in [0, cols); may be null when nnz == 0
  /// @param values nnz finite values; may be null when nnz == 0
  /// @param options conversion options (options.matrix_market is not used)
  /// @throw InvalidArgument for negative sizes, null pointers with nnz > 0, a row_ptr that does not start at
  ///        0 or decreases, or a column index out of range (the message names the first bad row);
  ///        RangeError for non-finite values, or values beyond fp16 range under ScalingPolicy::none.
  static SparseOperator from_csr(std::int32_t rows, std::int32_t cols, const std::int32_t* row_ptr,
                                 const std::int32_t* col_idx, const double* values,
                                 const OperatorOptions& options = {});
  /// The same with float values (widened exactly to double before conversion).
  static SparseOperator from_csr(std::int32_t rows, std::int32_t cols, const std::int32_t* row_ptr,
                                 const std::int32_t* col_idx, const float* values,
                                 const OperatorOptions& options = {});
  /// From a CsrMatrix (e.g. read_matrix_market's result). Same rules and exceptions as the array overloads.
  static SparseOperator from_csr(const CsrMatrix& a, const OperatorOptions& options = {});
  /// Adopts an already converted matrix (e.g. from load_bcsr24).
  /// @throw InvalidArgument if its tile lists are inconsistent with its sizes.
  static SparseOperator from_host(Bcsr24Matrix host, const OperatorOptions& options = {});

  ~SparseOperator();
  SparseOperator(SparseOperator&&) noexcept;
  SparseOperator& operator=(SparseOperator&&) noexcept;
  SparseOperator(const SparseOperator&) = delete;
  SparseOperator& operator=(const SparseOperator&) = delete;

  /// Rows of A. Never throws.
  std::int32_t rows() const noexcept;
  /// Columns of A. Never throws.
  std::int32_t cols() const noexcept;
  /// Nonzeros of the source (explicit zeros excluded). Never throws.
  std::int64_t nnz() const noexcept;

  /// Tile statistics: how many 16x32 tiles are 2:4 (sparse tensor cores), dense, or empty. Never throws.
  const TileCensus& census() const noexcept;
  /// The layout and row order the conversion chose (OperatorOptions::convert.layout / .reorder), why, the
  /// thesis baseline it was compared with and the preprocessing time of each step. For from_host / .b24 input,
  /// only layout and reordering are filled (the baseline fields are -1). Never throws.
  const LayoutReport& layout_report() const noexcept;
  /// The range findings, the power-of-two scales chosen by the conversion and what storing did to the values
  /// (flushed entries, relative error of the stored A). Never throws.
  const Fp16Scaling& scaling() const noexcept;
  /// How A's values are stored (OperatorOptions::convert.precision, or the .b24 file's). Never throws.
  Precision precision() const noexcept;
  /// The preprocessed host matrix (for save_bcsr24, reference_spmm, ...). Never throws.
  const Bcsr24Matrix& host() const noexcept;
  /// The options the operator was built with. Never throws.
  const OperatorOptions& options() const noexcept;

  /// Copies the matrix to the current CUDA device if not done yet; later calls do nothing.
  /// @throw NotSupported without a CUDA device of compute capability >= 8.0; CudaError on allocation or
  ///        copy failure (the operator stays usable and a later call retries).
  void upload() const;
  /// True once upload() (or a first make_plan/device call) has succeeded. Never throws.
  bool uploaded() const noexcept;
  /// The device copy, uploading first if needed. Same exceptions as upload().
  const DeviceMatrix& device() const;

  /// Makes a plan for B and C of `n` columns (uploading first if needed). The plan's run() is the multiply:
  /// plan.run(b, ldb, c, ldc, alpha, beta, stream) computes C = alpha * A * B + beta * C without allocating
  /// or synchronising the host (device.hpp).
  /// @param n columns of B and C, >= 1
  /// @param kernel which kernel: auto (default) puts each band on tiles or CSR by the cost model (the plan's
  ///        report() says how); dense_bt and dense_pipelined need OperatorOptions::upload_merged_dense,
  ///        csr_cuda_cores needs OperatorOptions::csr_copy = all
  /// @param options output type (fp32 or fp16), B's element type (16-bit of the matrix's precision or fp32;
  ///        split precision takes fp32 only) and unaligned-B support
  /// @throw InvalidArgument for n < 1 or a dense kernel without the merged dense upload; SizeLimitError if
  ///        the launch grid would be too large; plus upload()'s exceptions.
  SpmmPlan make_plan(std::int32_t n, KernelKind kernel = KernelKind::automatic,
                     const PlanOptions& options = {}) const;

 private:
  struct State;
  explicit SparseOperator(std::unique_ptr<State> state);
  static SparseOperator convert_and_adopt(const CsrMatrix& a, const OperatorOptions& options);
  static SparseOperator from_host_with_report(Bcsr24Matrix host, LayoutReport report, const OperatorOptions& options);
  std::unique_ptr<State> state_;
};

}  // namespace bcsr24
