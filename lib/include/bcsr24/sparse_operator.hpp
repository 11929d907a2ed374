// SparseOperator: the one entry point. Build once from a file, CSR arrays or Eigen (eigen.hpp); the device copy
// is made once; multiply many times through the plans it makes.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "bcsr24/csr_matrix.hpp"
#include "bcsr24/operator_options.hpp"
#include "bcsr24/operator_reports.hpp"
#include "bcsr24/precision.hpp"
#include "bcsr24/spmm_plan.hpp"

namespace bcsr24 {

namespace detail {
struct OperatorAccess;  // the library's own way in (host format, device copy)
}

/// A sparse matrix A preprocessed into BCSR-2:4 on the host (16x32 tiles: 2:4 tiles compressed for sparse tensor
/// cores, dense tiles; values in the chosen precision with power-of-two scaling) and uploaded once to a CUDA
/// device, ready for C = alpha * A * B + beta * C with tall-skinny B.
///
/// Lifetime: the device copy is made by upload(), or by the first make_plan(), on the CUDA device current on the
/// calling thread at that moment; its plans run on that device. Plans refer to the operator's device copy: the
/// operator must outlive them (moving the operator keeps them valid; destroying it does not).
///
/// Thread safety: every const member function may be called concurrently from several threads (the upload and
/// the lists some kernels need are made once, under a lock). A SpmmPlan is used by one thread at a time
/// (docs/API.md, "Threads and streams"). Moving, assigning or destroying an operator must not race with any other
/// use; a moved-from operator may only be assigned to or destroyed.
class SparseOperator {
 public:
  /// Reads a Matrix Market file (.mtx, or gzip content such as .mtx.gz) or a preprocessed .b24 file (by
  /// extension), then converts it. For .b24 files the conversion options are not used: the file's are, and the
  /// tuned choices the file holds are the operator's.
  /// @throw ParseError for a malformed or complex Matrix Market file (file and line) or a bad .b24 file (line 0);
  ///        SizeLimitError beyond 32-bit indices;
  ///        RangeError if values exceed the precision's range under ScalingPolicy::none.
  static SparseOperator from_file(const std::string& path, const OperatorOptions& options = {});

  /// Builds from CSR arrays in host memory (0-based, 32-bit indices); the arrays are copied and may be
  /// freed after the call. Columns within a row may come in any order; duplicate columns are summed.
  /// Explicit zeros are accepted and not stored.
  /// @param rows number of rows, >= 0
  /// @param cols number of columns, >= 0
  /// @param row_ptr rows + 1 non-decreasing offsets with row_ptr[0] == 0; nnz = row_ptr[rows]
  /// @param col_idx nnz column indices in [0, cols); may be null when nnz == 0
  /// @param values nnz finite values; may be null when nnz == 0
  /// @throw InvalidArgument for negative sizes, null pointers with nnz > 0, a row_ptr that does not start at
  ///        0 or decreases, or a column index out of range (the message names the first bad row);
  ///        RangeError for non-finite values, or values beyond the precision's range under ScalingPolicy::none.
  static SparseOperator from_csr(std::int32_t rows, std::int32_t cols, const std::int32_t* row_ptr,
                                 const std::int32_t* col_idx, const double* values,
                                 const OperatorOptions& options = {});
  /// The same with float values (widened exactly to double before conversion).
  static SparseOperator from_csr(std::int32_t rows, std::int32_t cols, const std::int32_t* row_ptr,
                                 const std::int32_t* col_idx, const float* values,
                                 const OperatorOptions& options = {});
  /// From a CsrMatrix (e.g. read_matrix_market's result). Same rules and exceptions as the array overloads.
  static SparseOperator from_csr(const CsrMatrix& a, const OperatorOptions& options = {});

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
  /// How A's values are stored (OperatorOptions::precision, or the .b24 file's). Never throws.
  Precision precision() const noexcept;
  /// The options the operator was built with (for a .b24 file: the defaults, with the file's precision,
  /// layout and reordering). Never throws.
  const OperatorOptions& options() const noexcept;

  /// Tile statistics: how many 16x32 tiles are 2:4 (sparse tensor cores), dense, or empty. Never throws.
  const TileCensus& census() const noexcept;
  /// The layout and row order the conversion chose, why, the thesis baseline it was compared with and the
  /// preprocessing time of each step. For .b24 input only layout and reordering are filled (the baseline fields
  /// are -1). Never throws.
  const LayoutReport& layout_report() const noexcept;
  /// The range findings, the power-of-two scales chosen by the conversion and what storing did to the values
  /// (flushed entries, relative error of the stored A). Never throws.
  const Fp16Scaling& scaling() const noexcept;

  /// Writes the preprocessed matrix to a .b24 file, which from_file() loads without converting again, with the
  /// choices its measured plans made (docs/FORMAT.md), which plans of the loaded operator reuse.
  /// @throw Error if the file cannot be written.
  void save(const std::string& path) const;
  /// The matrix as stored (each value in its precision times its power-of-two scale, in the caller's row and
  /// column order; values that flushed to zero absent): the matrix the products multiply by exactly.
  CsrMatrix stored_csr() const;
  /// Rows `rows` of stored_csr() (ascending, distinct, caller's numbering) as a rows.size() x cols() matrix,
  /// decoding only the 16-row bands that hold them: checks a product on a sample of rows of a matrix too large
  /// to decode whole (12 bytes per returned entry, and one pass over the row order of a reordered matrix).
  /// @throw InvalidArgument for a row out of [0, rows()) or not above the one before it.
  CsrMatrix stored_rows(const std::vector<std::int32_t>& rows) const;

  /// Copies the matrix to the current CUDA device if not done yet; later calls do nothing.
  /// @throw NotSupported without a CUDA device of compute capability >= 8.0; OutOfMemory when the device cannot
  ///        hold the lists (checked before allocating); CudaError on other failures (the operator stays usable and
  ///        a later call retries).
  void upload() const;
  /// True once upload() (or a first make_plan call) has succeeded. Never throws.
  bool uploaded() const noexcept;
  /// Device bytes held by the operator's device copy (0 before the upload). Never throws.
  std::int64_t device_bytes() const noexcept;

  /// Makes a plan for B and C of `n` columns (uploading first if needed). The plan's run() is the multiply:
  /// plan.run(b, ldb, c, ldc, alpha, beta, stream) computes C = alpha * A * B + beta * C without allocating
  /// or synchronising the host.
  /// @param n columns of B and C, >= 1
  /// @param kernel which kernel: automatic (default) puts each band on tiles or CSR by the cost model (the plan's
  ///        report() says how; at n = 1 it may put any band on CSR: its first plan at n = 1 adds every band's CSR
  ///        rows where they fit, and keeps them); the other kinds run one kernel on every band (the device lists
  ///        they need besides the default ones, all-dense tiles or every band's CSR rows, are made on first use
  ///        and kept)
  /// @param options output type (fp32 or fp16), B's element type (16-bit of the matrix's precision or fp32;
  ///        split precision takes fp32 only), unaligned-B support, and how an automatic plan is chosen: measured
  ///        (Tuning::measure, default: the model's best candidates timed on the matrix, the choice kept per n, types
  ///        and device and saved with the matrix) or by the cost model alone (Tuning::model)
  /// @throw InvalidArgument for n < 1, a B type the precision does not take, fp16 output with anything but fp16
  ///        A and B, a dense kernel on a matrix not stored in fp16, or when another CUDA device than the
  ///        operator's is current; OutOfMemory when the plan's work lists, workspace or the list its kernel adds
  ///        do not fit (nothing of the plan stays allocated; the operator and its other plans stay usable);
  ///        SizeLimitError if the launch grid would be too large; plus upload()'s exceptions.
  SpmmPlan make_plan(std::int32_t n, KernelKind kernel = KernelKind::automatic,
                     const PlanOptions& options = {}) const;

 private:
  struct State;
  explicit SparseOperator(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
  friend struct detail::OperatorAccess;
};

}  // namespace bcsr24
