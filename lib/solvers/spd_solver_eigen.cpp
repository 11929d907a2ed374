// SpdSolver's eigensolver half: the checks of an eigenvalue call (and of M for the generalized problem), the space
// it runs on (shared with the solves), the preconditioner it may use, and the report. The iteration itself is
// block_lobpcg.cpp's.
#include <optional>

#include "bcsr24/solvers.hpp"
#include "block_lobpcg.hpp"
#include "spd_solver_state.hpp"

namespace bcsr24::solvers {

namespace {

/// M of the generalized problem as the solver uses it ((M + M^T) / 2), after the checks that need no iteration: its
/// size against A's, symmetry to `tolerance`, finite entries and a positive diagonal. Nothing for the standard
/// problem (mass null).
std::optional<SymmetricMatrix> checked_mass(const CsrMatrix* mass, const CsrMatrix& a, double tolerance,
                                            const std::string& where) {
  if (!mass) return std::nullopt;
  if (mass->rows != a.rows || mass->cols != a.cols)
    throw InvalidArgument(where + "M is " + std::to_string(mass->rows) + " x " + std::to_string(mass->cols) +
                          ", A is " + std::to_string(a.rows) + " x " + std::to_string(a.cols));
  SymmetricMatrix m = checked_symmetric(*mass, tolerance, where + "M");
  const std::string diagonal = non_positive_diagonal(m.matrix);
  if (!diagonal.empty()) throw InvalidArgument(where + "M is not positive definite: " + diagonal);
  return m;
}

}  // namespace

EigenReport SpdSolver::State::eigen(const CsrMatrix* mass, double* x, int ldx, int k, const EigenOptions& o,
                                    Stream stream, bool on_host) {
  const std::string where = on_host ? "SpdSolver::eigenpairs_host: " : "SpdSolver::eigenpairs: ";
  if (share) throw NotSupported(where + "the eigensolver runs on one GPU (this solver is spread over several)");
  if (k < 1 || k > internal::small::kMaxColumns)
    throw InvalidArgument(where + "k = " + std::to_string(k) + " eigenpairs, expected 1 .. " +
                          std::to_string(internal::small::kMaxColumns));
  if (3 * std::int64_t(k) > a.rows)
    throw InvalidArgument(where + "k = " + std::to_string(k) + " is above n / 3 = " + std::to_string(a.rows / 3) +
                          ": a matrix this small wants a dense eigensolver");
  if (!x) throw InvalidArgument(where + "x is null");
  if (ldx < k) throw InvalidArgument(where + "ldx = " + std::to_string(ldx) + " is below k = " + std::to_string(k));
  if (!(o.tol > 0.0) || !std::isfinite(o.tol)) throw InvalidArgument(where + "tol must be finite and > 0");
  if (o.max_iterations < 0 || !(o.time_limit_seconds >= 0.0) || o.chebyshev_degree < 1)
    throw InvalidArgument(where + "max_iterations, time_limit_seconds and chebyshev_degree must be >= 0, >= 0, >= 1");
  // M's checks come before any work on the device: a wrong M is the caller's error, not a breakdown.
  const auto checks_start = Clock::now();
  const std::optional<SymmetricMatrix> m = checked_mass(mass, a, options.symmetry_tolerance, where);
  const double mass_check_seconds = mass ? seconds_since(checks_start) : 0.0;
  // The preconditioner approximates A^-1: for the smallest eigenvalues of a matrix with a positive diagonal only.
  Preconditioner used = o.preconditioner;
  if (o.largest || !not_positive_definite.empty()) used = Preconditioner::none;
  SolveOptions as_solve;
  as_solve.preconditioner = used;
  as_solve.inner_precision = o.inner_precision;
  as_solve.chebyshev_degree = o.chebyshev_degree;
  double setup_seconds = mass_check_seconds;
  const InnerEntry& entry = prepare(as_solve, on_host, k, internal::kLobpcgMemory, setup_seconds).entry;
  internal::GpuBlockSpace* gpu_space = on_host ? nullptr : gpu.get();
  internal::BlockSpace* space = on_host ? static_cast<internal::BlockSpace*>(cpu.get()) : gpu_space;
  // M lives in the space for this call only (the space is shared with the solves).
  struct MassScope {
    internal::BlockSpace* space;
    ~MassScope() { space->set_mass(nullptr); }
  } mass_scope{space};
  if (m) {
    const auto start = Clock::now();
    space->set_mass(&m->matrix);
    setup_seconds += seconds_since(start);
  }
  if (gpu_space) {
    gpu_space->wait_for(stream);
    gpu_space->reset_timings();
  }
  const internal::small::SmallLayout& l = space->layout();
  const int start = 0;
  const auto clock = Clock::now();
  if (on_host) {
    std::vector<double> block(std::size_t(a.rows) * std::size_t(k));
    for (std::int32_t i = 0; i < a.rows; ++i)
      std::copy(x + std::size_t(i) * ldx, x + std::size_t(i) * ldx + k, block.begin() + std::ptrdiff_t(i) * k);
    space->set_slot(start, block);
  } else {
    gpu_space->load_slot(start, static_cast<const double*>(x), ldx);
  }
  std::vector<double> norm2(static_cast<std::size_t>(k));
  space->column_norms(start, l.column[internal::small::dots]);
  space->read_small(l.column[internal::small::dots], k, norm2.data());
  for (int j = 0; j < k; ++j)
    if (!std::isfinite(norm2[std::size_t(j)]))
      throw InvalidArgument(where + "x (the starting block) column " + std::to_string(j) + " holds NaN or Inf");

  internal::LobpcgOptions lo;
  lo.tolerance = o.tol;
  lo.norm_estimate = norm_estimate > 0.0 ? norm_estimate : 1.0;
  lo.max_iterations = o.max_iterations;
  lo.largest = o.largest;
  lo.time_limit_seconds = o.time_limit_seconds;
  lo.jacobi = used == Preconditioner::jacobi;
  lo.generalized = mass != nullptr;
  EigenReport report;
  last.chebyshev.reset();
  last.lanczos_products = 0;
  if (used == Preconditioner::chebyshev) {
    lo.chebyshev = &polynomial_for(*space, entry, o.chebyshev_degree);
    if (last.lanczos_products > 0) report.spectrum_seconds = last.lanczos_seconds;
  }
  const std::int64_t lanczos_products = last.lanczos_products;
  int result_slot = start;
  const internal::LobpcgResult r = internal::block_lobpcg(*space, start, result_slot, lo);
  if (on_host) {
    const std::vector<double> block = space->slot(result_slot);
    for (std::int32_t i = 0; i < a.rows; ++i)
      std::copy(block.begin() + std::ptrdiff_t(i) * k, block.begin() + std::ptrdiff_t(i + 1) * k,
                x + std::size_t(i) * ldx);
  } else {
    gpu_space->store_slot(result_slot, x, ldx);
    gpu_space->synchronize();
    gpu_space->release_to(stream);
  }
  report.seconds = seconds_since(clock);
  report.setup_seconds = setup_seconds;
  report.stop = stop_reason(r.stop);
  report.message = r.message;
  report.iterations = r.iterations;
  report.converged = r.converged;
  report.eigenvalues = r.eigenvalues;
  report.residual_norm = r.residual_norm;
  report.norm_estimate = lo.norm_estimate;
  report.history = r.history;
  report.products = r.inner_products + r.outer_products + lanczos_products;
  report.host_synchronizations = r.synchronizations;
  report.preconditioner = used;
  if (gpu_space && settings.timing) {
    const internal::BlockTimings timings = gpu_space->timings();
    report.product_seconds = (timings.inner_product_ms + timings.outer_product_ms) * 1e-3;
    report.product_share = report.seconds > 0.0 ? report.product_seconds / report.seconds : 0.0;
  }
  return report;
}

EigenReport SpdSolver::eigenpairs(double* x, int ldx, int k, const EigenOptions& options, Stream stream) {
  return state_->eigen(nullptr, x, ldx, k, options, stream, false);
}

EigenReport SpdSolver::eigenpairs_host(double* x, int ldx, int k, const EigenOptions& options) {
  return state_->eigen(nullptr, x, ldx, k, options, nullptr, true);
}

EigenReport SpdSolver::eigenpairs(const CsrMatrix& m, double* x, int ldx, int k, const EigenOptions& options,
                                  Stream stream) {
  return state_->eigen(&m, x, ldx, k, options, stream, false);
}

EigenReport SpdSolver::eigenpairs_host(const CsrMatrix& m, double* x, int ldx, int k, const EigenOptions& options) {
  return state_->eigen(&m, x, ldx, k, options, nullptr, true);
}

}  // namespace bcsr24::solvers
