// bcsr24::solvers: GPU-resident solvers built on bcsr24's products (link bcsr24::solvers). SpdSolver holds a
// symmetric A and runs block conjugate gradients for a positive definite A and k = 1..64 right-hand sides at once,
// preconditioned by a Chebyshev polynomial of the Jacobi-scaled A whose products run on the sparse tensor cores, and
// LOBPCG for its k smallest or largest eigenpairs with the same preconditioner.
// The iteration itself is fp64 and the residual it stops on is the true one, b - A x in fp64, whatever precision the
// preconditioner's products use. docs/SOLVERS.md describes the algorithm, the options and the figures.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "bcsr24/communicator.hpp"
#include "bcsr24/csr_matrix.hpp"
#include "bcsr24/distributed_partition.hpp"
#include "bcsr24/error.hpp"
#include "bcsr24/precision.hpp"
#include "bcsr24/spmm_plan.hpp"  // Stream

namespace bcsr24::solvers {

/// The preconditioner of the block iteration.
enum class Preconditioner : std::uint8_t {
  chebyshev,  ///< a Chebyshev polynomial of D^-1/2 A D^-1/2 (products by bcsr24 in SolveOptions::inner_precision)
  jacobi,     ///< D^-1, in fp64
  none,       ///< the identity
};
const char* preconditioner_name(Preconditioner preconditioner) noexcept;  ///< "chebyshev", "jacobi", "none"
/// @throw InvalidArgument naming the accepted values.
Preconditioner preconditioner_from_name(const std::string& name);

/// Why a solve stopped.
enum class StopReason : std::uint8_t {
  converged,       ///< every column: |b_j - A x_j| <= max(rtol |b_j|, atol), in the true fp64 residual
  max_iterations,  ///< SolveOptions::max_iterations reached
  stagnation,      ///< the residual stopped falling (after a restart and the Jacobi fallback)
  breakdown,       ///< A is not positive definite (a non-positive diagonal or direction), or non-finite values
  time_limit,      ///< SolveOptions::time_limit_seconds reached
};
const char* stop_reason_name(StopReason reason) noexcept;  ///< "converged", "max_iterations", ...

/// Thrown when the matrix is not symmetric to within SpdOptions::symmetry_tolerance; names the worst pair.
class NotSymmetricError : public InvalidArgument {
 public:
  using InvalidArgument::InvalidArgument;
};

/// Fixed when the solver is made.
struct SpdOptions {
  /// A is accepted as symmetric when every pair satisfies |a_ij - a_ji| <= tol * max(|a_ij|, |a_ji|,
  /// sqrt(|a_ii a_jj|)) (an entry present on one side only counts as a pair with 0): the rounding that assembly leaves
  /// (finite elements summed in another order on each side) passes, a matrix that is not symmetric does not. The
  /// solver then works with (A + A^T) / 2. 0 demands exact symmetry.
  double symmetry_tolerance = 1e-8;
  /// Host threads of the conversion of the preconditioner's matrix (0: all).
  int threads = 0;
  /// On several GPUs (the NcclCommunicator constructor): how rows are assigned to ranks (DistributedOptions'
  /// meaning: automatic = METIS when the library has it).
  PartitionMethod partition = PartitionMethod::automatic;
};

/// Per solve. The defaults suit every SPD matrix; only the tolerances usually need setting.
struct SolveOptions {
  double rtol = 1e-8;           ///< stop when |b_j - A x_j| <= max(rtol |b_j|, atol) for every column j
  double atol = 0.0;
  int max_iterations = 1000;    ///< block iterations (each is one preconditioner application and two fp64 products)
  double time_limit_seconds = 0.0;  ///< wall-clock limit of the iteration (0: none)
  /// True: x holds the initial guess on entry. False: x is overwritten, the iteration starts from zero.
  bool initial_guess = false;
  Preconditioner preconditioner = Preconditioner::chebyshev;
  int chebyshev_degree = 15;    ///< residual polynomial degree (odd; even values are raised by one): degree - 1 products
  /// How the preconditioner's products store the scaled A: split (about fp32 accuracy, default), fp16 or bf16.
  /// The accuracy of the solution does not depend on it (the residual is fp64); the iteration count can.
  Precision inner_precision = Precision::split;
};

/// What a solve did. Residuals are true fp64 residuals |b_j - A x_j| of the returned x (before any rounding of x to
/// fp32 by the float overload).
struct SolveReport {
  StopReason stop = StopReason::max_iterations;
  std::string message;                     ///< one line: why it stopped, with the residual
  int iterations = 0;
  std::vector<double> relative_residual;   ///< per column: |b_j - A x_j| / |b_j| (|r_j| where b_j = 0)
  std::vector<double> residual_norm;       ///< per column: |b_j - A x_j|
  std::vector<double> history;             ///< max_j relative residual: [0] at the start, then after each iteration
  double seconds = 0.0;                    ///< time to solution: from the call's start to x written (setup excluded)
  double setup_seconds = 0.0;              ///< device buffers and the first plan of a new block width k
  double spectrum_seconds = 0.0;           ///< the Lanczos steps that bound the spectrum (0: reused from a solve before)
  double product_seconds = 0.0;            ///< device time in products (bcsr24's and fp64 ones)
  double product_share = 0.0;              ///< product_seconds / device time of the whole solve
  std::int64_t products = 0;               ///< block products (preconditioner and spectrum, fp64)
  std::int64_t host_synchronizations = 0;  ///< host waits during the iteration (one per iteration)
  Preconditioner preconditioner = Preconditioner::chebyshev;  ///< the one asked for
  int fallback_iteration = -1;             ///< iteration after which the Jacobi fallback took over (-1: none)
  std::string chebyshev;                   ///< the polynomial's interval and degree, and where they came from
  std::string plan;                        ///< how bcsr24 runs the preconditioner's products
};

/// Per eigenvalue computation (SpdSolver::eigenpairs).
struct EigenOptions {
  /// A pair is converged once |A x - lambda x| <= tol * ||A||, with ||A|| the Gershgorin bound max_i sum_j |a_ij|.
  double tol = 1e-5;
  int max_iterations = 500;
  bool largest = false;         ///< the k largest eigenvalues instead of the k smallest
  double time_limit_seconds = 0.0;
  /// For the smallest eigenvalues of a matrix with a positive diagonal: the Chebyshev polynomial of the solver (an
  /// approximate inverse of A), or Jacobi; otherwise (the largest, or a diagonal that is not positive) none is used.
  Preconditioner preconditioner = Preconditioner::chebyshev;
  int chebyshev_degree = 15;
  Precision inner_precision = Precision::split;
};

/// What an eigenvalue computation did. The eigenvectors are orthonormal (the returned block X has X^T X = I; for the
/// generalized problem X^T M X = I).
struct EigenReport {
  StopReason stop = StopReason::max_iterations;  ///< converged: every pair within the tolerance
  std::string message;
  int iterations = 0;
  int converged = 0;                     ///< pairs within the tolerance
  std::vector<double> eigenvalues;       ///< ascending for the smallest, descending for the largest
  std::vector<double> residual_norm;     ///< |A x_j - lambda_j x_j| per pair (generalized: |A x_j - lambda_j M x_j|)
  double norm_estimate = 0.0;            ///< the ||A|| of the tolerance
  std::vector<double> history;           ///< the largest |r_j| / ||A|| at each iteration
  double seconds = 0.0, setup_seconds = 0.0, spectrum_seconds = 0.0;
  double product_seconds = 0.0, product_share = 0.0;
  std::int64_t products = 0, host_synchronizations = 0;
  Preconditioner preconditioner = Preconditioner::none;  ///< the one used
};

namespace detail {
struct SolverAccess;  // the library's own way in (its tuning knobs and the last solve's whole record)
}

/// A symmetric positive definite A prepared once for many solves: its fp64 copy on the device, the Jacobi scaling
/// and the preconditioner's bcsr24 operators (made on first use, per inner precision), the spectrum bounds (found by
/// the first solve with each precision and reused). Blocks of X and B are row-major: row i of B is b + i * ldb, with
/// ldb >= k (bcsr24's convention for B and C).
///
/// Threads: one solve at a time per solver (solve() is not const: it reuses device buffers).
class SpdSolver {
 public:
  /// @throw InvalidArgument for a matrix that is not square or is empty, or has non-finite values;
  ///        NotSymmetricError beyond the symmetry tolerance (the message gives the worst pair and its ratio);
  ///        SizeLimitError beyond 32-bit indices.
  explicit SpdSolver(const CsrMatrix& a, const SpdOptions& options = {});
  /// The same solver on one rank of several GPUs, one GPU per rank (a thread or an MPI process each): every rank
  /// passes the whole A and its communicator, with the CUDA device of the communicator current. Rows are assigned
  /// by options.partition (rank 0's partition, broadcast), A is renumbered so that each rank's rows are contiguous
  /// (row_order()), and each rank keeps its rows. solve() then takes and returns this rank's rows of b and x in the
  /// solver's numbering (take_rank_rows / put_rank_rows with row_partition() and row_order()); every product runs
  /// through bcsr24's distributed operator with the halo exchanged beside the local part, every inner product is
  /// summed over the ranks, so the iteration (and its count) is the single-GPU one up to rounding. Construction and
  /// every solve are collective (every rank, the same arguments but its own rows). Needs the library built with
  /// NCCL; solve_host and the eigensolver run on one GPU only.
  /// @throw InvalidArgument as above, or for a rank that would own no rows (fewer rows than ranks);
  ///        NotSupported without NCCL in this build; CudaError (CUDA or NCCL).
  SpdSolver(const CsrMatrix& a, const NcclCommunicator& comm, const SpdOptions& options = {});
  /// Reads a Matrix Market file (ParseError and the above).
  static SpdSolver from_file(const std::string& path, const SpdOptions& options = {});
  ~SpdSolver();
  SpdSolver(SpdSolver&&) noexcept;
  SpdSolver& operator=(SpdSolver&&) noexcept;
  SpdSolver(const SpdSolver&) = delete;
  SpdSolver& operator=(const SpdSolver&) = delete;

  std::int32_t rows() const noexcept;
  std::int64_t nnz() const noexcept;  ///< of the symmetric matrix solved with
  /// The largest |a_ij - a_ji| / max(|a_ij|, |a_ji|, sqrt(|a_ii a_jj|)) found (0 for an exactly symmetric A).
  double asymmetry() const noexcept;
  /// The matrix the solver works with ((A + A^T) / 2 when A was symmetric to rounding only), in the caller's
  /// numbering.
  const CsrMatrix& matrix() const noexcept;
  /// Which rows of b and x this rank's solve() takes: rows row_partition().begin(rank()) .. end(rank()) of the
  /// solver's numbering, whose row i is the caller's row row_order()[i] (empty order: the caller's numbering). One
  /// GPU: rank 0 of one, owning every row.
  int rank() const noexcept;
  const RowPartition& row_partition() const noexcept;
  const std::vector<std::int32_t>& row_order() const noexcept;

  /// Solves A X = B for k right-hand sides on the current CUDA device. b, x: device memory, n x k row-major (on
  /// several GPUs: this rank's rows, row_partition().count(rank()) x k).
  /// Work is ordered after what `stream` holds; when solve returns, x is written and `stream` holds nothing of it.
  /// Non-convergence is reported (SolveReport::stop), never thrown.
  /// @throw InvalidArgument for k outside 1..64, ld < k, null pointers, or NaN / Inf in b (or in x with
  ///        initial_guess), found before any iteration; NotSupported without a CUDA device; OutOfMemory; CudaError.
  SolveReport solve(const double* b, int ldb, double* x, int ldx, int k, const SolveOptions& options = {},
                    Stream stream = nullptr);
  /// The same with fp32 b and x (the iteration is fp64 inside; x is rounded to fp32 once at the end).
  SolveReport solve(const float* b, int ldb, float* x, int ldx, int k, const SolveOptions& options = {},
                    Stream stream = nullptr);
  /// The same algorithm on the host, b and x in host memory, bcsr24's products emulated from the stored operator:
  /// the reference the GPU path is tested against. Slow; its timings mean nothing.
  SolveReport solve_host(const double* b, int ldb, double* x, int ldx, int k, const SolveOptions& options = {});

  /// The k smallest (or largest) eigenpairs of the symmetric A by LOBPCG (block algebra and products in fp64 on the
  /// device, the Rayleigh-Ritz step on the host, one host synchronisation per iteration). x: device memory, n x k
  /// row-major (ldx >= k), the starting block on entry (full rank; random is fine), the eigenvectors on return.
  /// Non-convergence is reported, not thrown. A need not be positive definite.
  /// @throw InvalidArgument for k outside 1..64 or above n / 3, ldx < k, a rank-deficient or non-finite start;
  ///        NotSupported without a CUDA device; OutOfMemory; CudaError.
  EigenReport eigenpairs(double* x, int ldx, int k, const EigenOptions& options = {}, Stream stream = nullptr);
  /// The same on the host (the reference of the tests).
  EigenReport eigenpairs_host(double* x, int ldx, int k, const EigenOptions& options = {});
  /// The generalized problem A x = lambda M x for a symmetric positive definite M (a finite-element mass matrix;
  /// n x n, symmetric to SpdOptions::symmetry_tolerance, used as (M + M^T) / 2). The same LOBPCG with M's Gram
  /// matrices and one more fp64 product (M W) per iteration; the returned X is M-orthonormal (X^T M X = I) and a pair
  /// is converged once |A x - lambda M x| <= tol * ||A||. M is copied to the device for the call.
  /// @throw as above; InvalidArgument for an M of the wrong size or with non-finite entries, and "M is not positive
  ///        definite" for a non-positive diagonal entry, a starting block on which X^T M X has no Cholesky factor, or
  ///        a search space on which M's Gram matrix has a clearly negative eigenvalue; NotSymmetricError.
  EigenReport eigenpairs(const CsrMatrix& m, double* x, int ldx, int k, const EigenOptions& options = {},
                         Stream stream = nullptr);
  EigenReport eigenpairs_host(const CsrMatrix& m, double* x, int ldx, int k, const EigenOptions& options = {});

 private:
  struct State;
  std::unique_ptr<State> state_;
  friend struct detail::SolverAccess;
};

}  // namespace bcsr24::solvers
