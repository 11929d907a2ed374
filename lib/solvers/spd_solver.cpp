// SpdSolver: the public face of the block solver. It owns the symmetric matrix, the inner operators (one per
// backend and precision, made on first use), the Lanczos estimates (one per inner operator, reused) and one solver
// space (rebuilt when k or the inner operator changes); each solve loads B (and X0) into the space, checks them,
// runs the block iteration and writes X back. The eigensolver's half is spd_solver_eigen.cpp.
#include "bcsr24/solvers.hpp"

#include <cuda_runtime_api.h>

#include "bcsr24/matrix_market.hpp"
#include "format/name_table.hpp"
#ifdef BCSR24_HAS_NCCL
#include "distributed/agreed_partition.hpp"
#include "distributed/halo_plan.hpp"
#include "nccl_rank_link.hpp"
#endif
#include "spd_solver_state.hpp"
#include "symmetry.hpp"

namespace bcsr24::solvers {

namespace {

constexpr bcsr24::detail::Named<Preconditioner> kPreconditioners[] = {
    {Preconditioner::chebyshev, "chebyshev"}, {Preconditioner::jacobi, "jacobi"}, {Preconditioner::none, "none"}};
constexpr bcsr24::detail::Named<StopReason> kStopReasons[] = {{StopReason::converged, "converged"},
                                                              {StopReason::max_iterations, "max_iterations"},
                                                              {StopReason::stagnation, "stagnation"},
                                                              {StopReason::breakdown, "breakdown"},
                                                              {StopReason::time_limit, "time_limit"}};

}  // namespace

const char* preconditioner_name(Preconditioner preconditioner) noexcept {
  return bcsr24::detail::name_in(kPreconditioners, preconditioner, "unknown");
}

Preconditioner preconditioner_from_name(const std::string& name) {
  return bcsr24::detail::value_in(kPreconditioners, name, "preconditioner");
}

const char* stop_reason_name(StopReason reason) noexcept {
  return bcsr24::detail::name_in(kStopReasons, reason, "unknown");
}

namespace {

void check_arguments(const void* b, int ldb, const void* x, int ldx, int k, const SolveOptions& o) {
  const std::string where = "SpdSolver::solve: ";
  if (k < 1 || k > internal::small::kMaxColumns)
    throw InvalidArgument(where + "k = " + std::to_string(k) + " right-hand sides, expected 1 .. " +
                          std::to_string(internal::small::kMaxColumns));
  if (!b || !x) throw InvalidArgument(where + (b ? "x" : "b") + " is null");
  if (ldb < k || ldx < k)
    throw InvalidArgument(where + (ldb < k ? "ldb = " + std::to_string(ldb) : "ldx = " + std::to_string(ldx)) +
                          " is below k = " + std::to_string(k));
  if (!(o.rtol >= 0.0) || !(o.atol >= 0.0) || !std::isfinite(o.rtol) || !std::isfinite(o.atol))
    throw InvalidArgument(where + "rtol and atol must be finite and >= 0");
  if (o.rtol == 0.0 && o.atol == 0.0) throw InvalidArgument(where + "rtol and atol are both 0: nothing could converge");
  if (o.max_iterations < 0) throw InvalidArgument(where + "max_iterations must be >= 0");
  if (!(o.time_limit_seconds >= 0.0)) throw InvalidArgument(where + "time_limit_seconds must be >= 0");
  if (o.chebyshev_degree < 1) throw InvalidArgument(where + "chebyshev_degree must be >= 1");
}

}  // namespace

SymmetricMatrix impl::checked_symmetric(const CsrMatrix& a, double tolerance, const std::string& who) {
  if (a.rows != a.cols)
    throw InvalidArgument(who + " is " + std::to_string(a.rows) + " x " + std::to_string(a.cols) +
                          ": an SPD matrix is square");
  if (a.rows < 1) throw InvalidArgument(who + " is empty");
  validate_csr(a);
  for (std::size_t p = 0; p < a.values.size(); ++p)
    if (!std::isfinite(a.values[p])) {
      std::int32_t row = 0;
      while (a.row_ptr[std::size_t(row) + 1] <= std::int32_t(p)) ++row;
      throw InvalidArgument(who + ": entry (" + std::to_string(row) + ", " + std::to_string(a.col_idx[p]) +
                            ") is not finite");
    }
  const internal::Asymmetry asymmetry = internal::measure_asymmetry(a);
  if (asymmetry.ratio > tolerance)
    throw NotSymmetricError(who + " is not symmetric: a(" + std::to_string(asymmetry.row) + ", " +
                            std::to_string(asymmetry.col) + ") = " + sci(asymmetry.a_ij) + " but a(" +
                            std::to_string(asymmetry.col) + ", " + std::to_string(asymmetry.row) + ") = " +
                            sci(asymmetry.a_ji) + ", a difference of " + sci(asymmetry.ratio) +
                            " relative to max(|a_ij|, |a_ji|, sqrt(|a_ii a_jj|)), above the symmetry tolerance " +
                            sci(tolerance));
  return {asymmetry.ratio > 0.0 ? internal::symmetric_part(a) : a, asymmetry.ratio};
}

SpdSolver::SpdSolver(const CsrMatrix& a, const SpdOptions& options) : state_(std::make_unique<State>()) {
  State& st = *state_;
  st.options = options;
  if (!(options.symmetry_tolerance >= 0.0))
    throw InvalidArgument("SpdSolver: symmetry_tolerance must be >= 0");
  SymmetricMatrix symmetric = checked_symmetric(a, options.symmetry_tolerance, "SpdSolver: the matrix");
  st.asymmetry = symmetric.asymmetry;
  st.a = std::move(symmetric.matrix);
  st.not_positive_definite = non_positive_diagonal(st.a);
  st.norm_estimate = internal::gershgorin_bound(st.a, {}, 0.0);
  st.partition.offsets = {0, st.a.rows};
}

SpdSolver::SpdSolver(const CsrMatrix& a, const NcclCommunicator& comm, const SpdOptions& options)
    : SpdSolver(a, options) {
#ifdef BCSR24_HAS_NCCL
  State& st = *state_;
  check_communicator(comm, "SpdSolver");
  auto share = std::make_unique<RankShare>();
  share->comm = comm;
  PartitionMethod used = PartitionMethod::contiguous;
  st.partition = distributed::agreed_partition(st.a, comm, options.partition, DistributedOptions{}.cost, share->order,
                                               used);
  if (used == PartitionMethod::contiguous) {
    share->order.clear();  // the caller's numbering
    share->rows = bcsr24::detail::extract_rows(st.a, st.partition.begin(comm.rank), st.partition.end(comm.rank));
  } else {
    share->rows = extract_permuted_rows(st.a, share->order, invert_permutation(share->order),
                                        st.partition.begin(comm.rank), st.partition.end(comm.rank));
  }
  share->link = internal::make_nccl_rank_link(share->rows, st.partition, share->order, comm);
  st.share = std::move(share);
#else
  (void)comm;
  throw NotSupported("SpdSolver: several GPUs need bcsr24 built with NCCL (bcsr24_distributed)");
#endif
}

SpdSolver SpdSolver::from_file(const std::string& path, const SpdOptions& options) {
  return SpdSolver(read_matrix_market(path), options);
}

SpdSolver::~SpdSolver() = default;
SpdSolver::SpdSolver(SpdSolver&&) noexcept = default;
SpdSolver& SpdSolver::operator=(SpdSolver&&) noexcept = default;

std::int32_t SpdSolver::rows() const noexcept { return state_->a.rows; }
std::int64_t SpdSolver::nnz() const noexcept { return state_->a.nnz(); }
double SpdSolver::asymmetry() const noexcept { return state_->asymmetry; }
const CsrMatrix& SpdSolver::matrix() const noexcept { return state_->a; }
int SpdSolver::rank() const noexcept { return state_->share ? state_->share->comm.rank : 0; }
const RowPartition& SpdSolver::row_partition() const noexcept { return state_->partition; }
const std::vector<std::int32_t>& SpdSolver::row_order() const noexcept {
  static const std::vector<std::int32_t> none;
  return state_->share ? state_->share->order : none;
}

SolveReport SpdSolver::State::run(internal::BlockSpace& space, internal::GpuBlockSpace* on_gpu,
                                  const InnerEntry& entry, const SolveOptions& o, const BlockTransfer& transfer,
                                  bool new_space, double setup_seconds) {
  const internal::small::SmallLayout& l = space.layout();
  const int k = space.k();
  const bool polynomial = o.preconditioner == Preconditioner::chebyshev;
  internal::ChebyshevOptions polynomial_options = settings.polynomial;
  polynomial_options.degree = o.chebyshev_degree;
  internal::BlockFcgOptions fcg = settings.fcg;
  fcg.tolerance = o.rtol;
  fcg.absolute_tolerance = o.atol;
  fcg.max_iterations = o.max_iterations;
  fcg.time_limit_seconds = o.time_limit_seconds;
  fcg.initial_guess = o.initial_guess;
  fcg.identity_base = o.preconditioner == Preconditioner::none;
  // The Jacobi fallback is for a polynomial made non-linear by fp16 or bf16 products (B rounded per tile); with
  // split products it is linear to fp32 rounding, and a plateau of the residual only means a hard problem, on which
  // Jacobi is far weaker: keep the polynomial and stop only on the long window.
  fcg.fallback_jacobi = fcg.fallback_jacobi && o.inner_precision != Precision::split;

  if (new_space && settings.warm_up) {
    // The first products and kernels of a process pay for module loading and library set-up: one short run on the
    // new space keeps that out of the solve's figures.
    const auto start = Clock::now();
    transfer.load_b();
    internal::BlockFcgOptions warm = fcg;
    warm.max_iterations = 1;
    warm.time_limit_seconds = 0.0;
    warm.initial_guess = false;
    if (polynomial) {
      internal::ChebyshevOptions quick = polynomial_options;
      quick.lanczos_steps = 2;
      const internal::ChebyshevChoice choice =
          internal::choose_chebyshev(internal::run_lanczos(space, 2, quick.seed), entry.gershgorin, quick);
      internal::block_fcg(space, &choice.polynomial, warm);
    } else {
      internal::block_fcg(space, nullptr, warm);
    }
    if (on_gpu) on_gpu->reset_timings();
    setup_seconds += seconds_since(start);
  }

  last.result = {};
  last.chebyshev.reset();
  last.timings.reset();
  last.lanczos_seconds = 0.0;
  last.lanczos_products = 0;
  last.inner = polynomial ? &entry.inner : nullptr;
  const auto start = Clock::now();
  // B and X0 are checked before any work: a non-finite value would only surface as a breakdown later.
  std::vector<double> norm2(static_cast<std::size_t>(k));
  const auto check_finite = [&](int slot, const char* name) {
    space.column_norms(slot, l.column[internal::small::b_norm2]);
    space.read_small(l.column[internal::small::b_norm2], k, norm2.data());
    for (int j = 0; j < k; ++j)
      if (!std::isfinite(norm2[std::size_t(j)]))
        throw InvalidArgument(std::string("SpdSolver::solve: ") + name + " column " + std::to_string(j) +
                              " holds NaN or Inf (or values whose squares overflow)");
  };
  if (o.initial_guess) {
    transfer.load_x();
    check_finite(S::x, "x (the initial guess)");
  }
  transfer.load_b();
  check_finite(S::b, "b");
  const std::vector<double> b_norm2 = norm2;

  const internal::ChebyshevPolynomial* chebyshev =
      polynomial ? &polynomial_for(space, entry, o.chebyshev_degree) : nullptr;
  last.result = internal::block_fcg(space, chebyshev, fcg, settings.observer);
  transfer.store_x();
  if (on_gpu) {
    on_gpu->synchronize();
    if (settings.timing) last.timings = on_gpu->timings();
  }

  SolveReport report;
  report.seconds = seconds_since(start);
  last.iterate_seconds = report.seconds - last.lanczos_seconds;
  const internal::BlockFcgResult& r = last.result;
  report.stop = stop_reason(r.stop);
  report.message = r.message;
  report.iterations = r.iterations;
  report.relative_residual = r.final_relative;
  for (int j = 0; j < k; ++j) {
    const double b_norm = std::sqrt(b_norm2[std::size_t(j)]);
    report.residual_norm.push_back(b_norm > 0.0 ? r.final_relative[std::size_t(j)] * b_norm
                                                : r.final_relative[std::size_t(j)]);
  }
  double initial = 0.0;
  for (double v : r.initial_relative) initial = std::max(initial, v);
  report.history.push_back(initial);
  for (const internal::BlockIterationRecord& record : r.history) report.history.push_back(record.max_relative);
  report.setup_seconds = setup_seconds;
  report.spectrum_seconds = last.lanczos_products > 0 ? last.lanczos_seconds : 0.0;
  if (last.timings) {
    report.product_seconds = (last.timings->inner_product_ms + last.timings->outer_product_ms) * 1e-3;
    report.product_share = report.seconds > 0.0 ? report.product_seconds / report.seconds : 0.0;
  }
  report.products = r.inner_products + r.outer_products + last.lanczos_products;
  report.host_synchronizations = r.synchronizations;
  report.preconditioner = o.preconditioner;
  report.fallback_iteration = r.fallback_iteration;
  if (last.chebyshev) report.chebyshev = last.chebyshev->reason;
  if (on_gpu) {
    report.plan = on_gpu->plan_summary();
    last.plan = report.plan;
    last.device_bytes = on_gpu->device_bytes();
  }
  return report;
}

namespace {

/// The report of a solve that cannot start: A has a non-positive diagonal.
SolveReport not_positive_definite_report(const std::string& why, const SolveOptions& o) {
  SolveReport report;
  report.stop = StopReason::breakdown;
  report.message = "stopped: breakdown before the first iteration: " + why;
  report.preconditioner = o.preconditioner;
  return report;
}

}  // namespace

template <typename Value>
SolveReport SpdSolver::State::solve_on_gpu(const Value* b, int ldb, Value* x, int ldx, int k, const SolveOptions& o,
                                           Stream stream) {
  State& st = *this;
  check_arguments(b, ldb, x, ldx, k, o);
  if (st.share && o.time_limit_seconds > 0.0)
    throw InvalidArgument("SpdSolver::solve: no time limit on several GPUs (each rank's clock would stop it at a "
                          "different iteration, and the others would wait for it)");
  if (!st.not_positive_definite.empty()) {
    if (!o.initial_guess)
      if (cudaMemset2DAsync(x, std::size_t(ldx) * sizeof(Value), 0, std::size_t(k) * sizeof(Value),
                            std::size_t(st.partition.count(st.share ? st.share->comm.rank : 0)),
                            reinterpret_cast<cudaStream_t>(stream)) != cudaSuccess ||
          cudaStreamSynchronize(reinterpret_cast<cudaStream_t>(stream)) != cudaSuccess)
        throw CudaError("SpdSolver::solve: zeroing x failed");
    return not_positive_definite_report(st.not_positive_definite, o);
  }
  double setup_seconds = 0.0;
  const auto [entry, new_space] = st.prepare(o, false, k, st.settings.fcg.memory, setup_seconds);
  internal::GpuBlockSpace& space = *st.gpu;
  space.wait_for(stream);
  BlockTransfer transfer;
  transfer.load_b = [&] { space.load_slot(S::b, b, ldb); };
  transfer.load_x = [&] { space.load_slot(S::x, static_cast<const Value*>(x), ldx); };
  transfer.store_x = [&] { space.store_slot(S::x, x, ldx); };
  SolveReport report = st.run(space, &space, entry, o, transfer, new_space, setup_seconds);
  space.release_to(stream);
  return report;
}

SolveReport SpdSolver::solve(const double* b, int ldb, double* x, int ldx, int k, const SolveOptions& options,
                             Stream stream) {
  return state_->solve_on_gpu(b, ldb, x, ldx, k, options, stream);
}

SolveReport SpdSolver::solve(const float* b, int ldb, float* x, int ldx, int k, const SolveOptions& options,
                             Stream stream) {
  return state_->solve_on_gpu(b, ldb, x, ldx, k, options, stream);
}

SolveReport SpdSolver::solve_host(const double* b, int ldb, double* x, int ldx, int k, const SolveOptions& o) {
  State& st = *state_;
  if (st.share) throw NotSupported("SpdSolver::solve_host: the host solver runs on one process, not on several GPUs");
  check_arguments(b, ldb, x, ldx, k, o);
  const std::int32_t n = st.a.rows;
  if (!st.not_positive_definite.empty()) {
    if (!o.initial_guess)
      for (std::int32_t i = 0; i < n; ++i) std::fill(x + std::size_t(i) * ldx, x + std::size_t(i) * ldx + k, 0.0);
    return not_positive_definite_report(st.not_positive_definite, o);
  }
  double setup_seconds = 0.0;
  const auto [entry, new_space] = st.prepare(o, true, k, st.settings.fcg.memory, setup_seconds);
  internal::CpuBlockSpace& space = *st.cpu;
  // The CPU space holds n x k row-major blocks: the caller's rows of stride ld are packed and unpacked.
  const auto packed = [&](const double* from, int ld) {
    std::vector<double> block(std::size_t(n) * std::size_t(k));
    for (std::int32_t i = 0; i < n; ++i)
      std::copy(from + std::size_t(i) * ld, from + std::size_t(i) * ld + k, block.begin() + std::ptrdiff_t(i) * k);
    return block;
  };
  BlockTransfer transfer;
  transfer.load_b = [&] { space.set_slot(S::b, packed(b, ldb)); };
  transfer.load_x = [&] { space.set_slot(S::x, packed(x, ldx)); };
  transfer.store_x = [&] {
    const std::vector<double> block = space.slot(S::x);
    for (std::int32_t i = 0; i < n; ++i)
      std::copy(block.begin() + std::ptrdiff_t(i) * k, block.begin() + std::ptrdiff_t(i + 1) * k,
                x + std::size_t(i) * ldx);
  };
  return st.run(space, nullptr, entry, o, transfer, new_space, setup_seconds);
}

namespace detail {

EngineSettings& SolverAccess::settings(SpdSolver& solver) { return solver.state_->settings; }
const LastSolve& SolverAccess::last(const SpdSolver& solver) { return solver.state_->last; }

}  // namespace detail

}  // namespace bcsr24::solvers
