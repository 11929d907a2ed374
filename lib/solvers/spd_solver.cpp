// SpdSolver: the public face of the block solver. It owns the symmetric matrix, the inner operators (one per
// backend and precision, made on first use), the Lanczos estimates (one per inner operator, reused) and one solver
// space (rebuilt when k or the inner operator changes); each solve loads B (and X0) into the space, checks them,
// runs the block iteration and writes X back.
#include "bcsr24/solvers.hpp"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <utility>

#include <cuda_runtime_api.h>

#include "bcsr24/matrix_market.hpp"
#include "block_lobpcg.hpp"
#include "rank_link.hpp"
#ifdef BCSR24_HAS_NCCL
#include "bcsr24/distributed_operator.hpp"
#include "distributed/agreed_partition.hpp"
#include "nccl_rank_link.hpp"
#endif
#include "sci_text.hpp"
#include "solver_access.hpp"
#include "symmetry.hpp"

namespace bcsr24::solvers {

namespace internal = bcsr24::solver;
using internal::sci;

const char* preconditioner_name(Preconditioner preconditioner) noexcept {
  switch (preconditioner) {
    case Preconditioner::chebyshev: return "chebyshev";
    case Preconditioner::jacobi: return "jacobi";
    case Preconditioner::none: return "none";
  }
  return "unknown";
}

Preconditioner preconditioner_from_name(const std::string& name) {
  for (Preconditioner p : {Preconditioner::chebyshev, Preconditioner::jacobi, Preconditioner::none})
    if (name == preconditioner_name(p)) return p;
  throw InvalidArgument("unknown preconditioner '" + name + "' (chebyshev, jacobi, none)");
}

const char* stop_reason_name(StopReason reason) noexcept {
  switch (reason) {
    case StopReason::converged: return "converged";
    case StopReason::max_iterations: return "max_iterations";
    case StopReason::stagnation: return "stagnation";
    case StopReason::breakdown: return "breakdown";
    case StopReason::time_limit: return "time_limit";
  }
  return "unknown";
}

namespace {

using Clock = std::chrono::steady_clock;
using S = internal::BlockSlots;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

StopReason stop_reason(internal::BlockStop stop) {
  switch (stop) {
    case internal::BlockStop::converged: return StopReason::converged;
    case internal::BlockStop::max_iterations: return StopReason::max_iterations;
    case internal::BlockStop::stagnation: return StopReason::stagnation;
    case internal::BlockStop::breakdown: return StopReason::breakdown;
    case internal::BlockStop::time_limit: return StopReason::time_limit;
  }
  return StopReason::breakdown;
}

/// Relative rounding of the inner matrix's stored values, for the Gershgorin bound of what is multiplied.
double stored_relative_error(internal::InnerBackend backend, Precision precision) {
  if (backend == internal::InnerBackend::cusparse_csr_f32) return 1e-6;
  switch (precision) {
    case Precision::fp16: return 1e-3;
    case Precision::bf16: return 8e-3;
    case Precision::split: return 1e-6;
  }
  return 1e-2;
}

/// The first row whose diagonal is missing or not positive, as a message ("" when every a_ii > 0).
std::string non_positive_diagonal(const CsrMatrix& a) {
  for (std::int32_t i = 0; i < a.rows; ++i) {
    double d = 0.0;
    for (std::int32_t p = a.row_ptr[std::size_t(i)]; p < a.row_ptr[std::size_t(i) + 1]; ++p)
      if (a.col_idx[std::size_t(p)] == i) d = a.values[std::size_t(p)];
    if (!(d > 0.0))
      return "row " + std::to_string(i) + " has diagonal " + sci(d) + ": the matrix is not positive definite";
  }
  return "";
}

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

/// One inner operator and the rigorous upper bound of its spectrum.
struct InnerEntry {
  internal::InnerMatrix inner;
  double gershgorin = 0.0;
};

/// What a space was made for: a different key makes a new space.
struct SpaceKey {
  int k = 0, memory = 0, lanczos_steps = 0;
  const internal::InnerMatrix* inner = nullptr;
  bool timing = false;
  int variant = 0;  // the GPU's outer product, or the CPU's rounding
  bool operator==(const SpaceKey& o) const {
    return k == o.k && memory == o.memory && lanczos_steps == o.lanczos_steps && inner == o.inner &&
           timing == o.timing && variant == o.variant;
  }
};

/// How a solve moves the caller's blocks in and out of the space.
struct BlockTransfer {
  std::function<void()> load_b, load_x, store_x;
};

}  // namespace

/// On several GPUs: this rank's place, its rows, and the link its spaces run through.
struct RankShare {
  NcclCommunicator comm;
  std::vector<std::int32_t> order;  // solver row -> caller row (empty: the caller's numbering)
  CsrMatrix rows;                   // this rank's rows of A, solver numbering, global columns
  std::unique_ptr<internal::RankLink> link;
};

struct SpdSolver::State {
  CsrMatrix a;
  RowPartition partition;            // one GPU: {0, n}
  std::unique_ptr<RankShare> share;  // several GPUs (null: one)
  double asymmetry = 0.0;
  SpdOptions options;
  std::string not_positive_definite;  // a non-positive diagonal: every solve stops with breakdown
  double norm_estimate = 0.0;         // max_i sum_j |a_ij|: the ||A|| of the eigensolver's tolerance
  detail::EngineSettings settings;
  detail::LastSolve last;
  std::map<std::pair<int, int>, std::unique_ptr<InnerEntry>> inner;  // (backend, precision)
  std::map<const internal::InnerMatrix*, internal::LanczosEstimate> spectrum;
  std::unique_ptr<internal::GpuBlockSpace> gpu;
  std::unique_ptr<internal::CpuBlockSpace> cpu;
  SpaceKey gpu_key, cpu_key;

  /// The inner matrix of the preconditioner (without the polynomial: none).
  InnerEntry& inner_for(const SolveOptions& o, double& setup_seconds) {
    const bool polynomial = o.preconditioner == Preconditioner::chebyshev;
    const internal::InnerBackend backend = polynomial ? settings.backend : internal::InnerBackend::none;
    const std::pair<int, int> key{int(backend) + (settings.jacobi_scaling ? 0 : 8),
                                  polynomial ? int(o.inner_precision) : -1};
    std::unique_ptr<InnerEntry>& entry = inner[key];
    if (!entry) {
      const auto start = Clock::now();
      entry = std::make_unique<InnerEntry>();
      if (polynomial) {
        OperatorOptions operator_options;
        operator_options.precision = o.inner_precision;
        operator_options.threads = options.threads;
        entry->inner = share ? distributed_inner(backend, operator_options)
                             : internal::prepare_inner_matrix(a, backend, settings.jacobi_scaling, operator_options);
        // The bound of the whole scaled matrix (on several GPUs the inner matrix's scale holds this rank's rows only).
        entry->gershgorin = internal::gershgorin_bound(
            a, share && settings.jacobi_scaling ? internal::jacobi_scale(a) : entry->inner.row_scale,
            stored_relative_error(backend, o.inner_precision));
        last.preprocess_seconds = entry->inner.preprocess_seconds;
      } else {
        entry->inner.backend = internal::InnerBackend::none;
      }
      setup_seconds += seconds_since(start);
    }
    return *entry;
  }

  /// This rank's share of the inner matrix (S A S with S the Jacobi scaling, or A): a distributed operator made
  /// from this rank's scaled rows (collective), and its rows of S.
  internal::InnerMatrix distributed_inner(internal::InnerBackend backend, const OperatorOptions& operator_options) {
#ifdef BCSR24_HAS_NCCL
    if (backend != internal::InnerBackend::bcsr24)
      throw NotSupported(std::string("SpdSolver: the ") + internal::inner_backend_name(backend) +
                         " inner product runs on one GPU only");
    const auto start = Clock::now();
    internal::InnerMatrix inner;
    inner.backend = backend;
    CsrMatrix scaled = share->rows;
    if (settings.jacobi_scaling) {
      const std::vector<double> caller_scale = internal::jacobi_scale(a);
      std::vector<double> scale(caller_scale.size());  // in the solver's numbering
      for (std::size_t i = 0; i < scale.size(); ++i)
        scale[i] = caller_scale[share->order.empty() ? i : std::size_t(share->order[i])];
      const std::int32_t begin = partition.begin(share->comm.rank);
      for (std::int32_t i = 0; i < scaled.rows; ++i)
        for (std::int32_t p = scaled.row_ptr[std::size_t(i)]; p < scaled.row_ptr[std::size_t(i) + 1]; ++p) {
          const std::size_t column = std::size_t(scaled.col_idx[std::size_t(p)]);
          scaled.values[std::size_t(p)] *= scale[std::size_t(begin + i)] * scale[column];
        }
      inner.row_scale.assign(scale.begin() + begin, scale.begin() + begin + scaled.rows);
    }
    DistributedOptions distributed_options;
    distributed_options.part = operator_options;
    inner.distributed = std::make_shared<const DistributedOperator>(
        DistributedOperator::from_rank_rows(scaled, partition, partition, share->comm, distributed_options));
    inner.preprocess_seconds = seconds_since(start);
    return inner;
#else
    (void)backend;
    (void)operator_options;
    throw NotSupported("SpdSolver: this build of bcsr24 has no NCCL");
#endif
  }

  int lanczos_steps() const { return std::max(2, settings.polynomial.lanczos_steps); }

  /// The GPU (on_host false) or host space for k columns and `memory`, made anew when what it was made for changed;
  /// the time that took is added to setup_seconds and last.upload_seconds. Returns whether it was made.
  bool ensure_space(bool on_host, int k, int memory, const InnerEntry& entry, double& setup_seconds) {
    const SpaceKey key{k, memory, lanczos_steps(), &entry.inner, on_host ? false : settings.timing,
                       on_host ? int(settings.cpu_rounding) : int(settings.outer_product)};
    if (on_host ? (cpu && cpu_key == key) : (gpu && gpu_key == key)) return false;
    const auto start = Clock::now();
    if (on_host && share) throw NotSupported("SpdSolver: the host solver runs on one process, not on several GPUs");
    if (on_host) {
      cpu.reset();  // its memory first
      cpu = std::make_unique<internal::CpuBlockSpace>(a, entry.inner, k, memory, key.lanczos_steps,
                                                      settings.cpu_rounding);
      cpu_key = key;
    } else {
      gpu.reset();
      gpu = share ? std::make_unique<internal::GpuBlockSpace>(share->link->local_part(), entry.inner, k, memory,
                                                              key.lanczos_steps, key.timing, settings.outer_product,
                                                              settings.foreign, share->link.get())
                  : std::make_unique<internal::GpuBlockSpace>(a, entry.inner, k, memory, key.lanczos_steps,
                                                              key.timing, settings.outer_product, settings.foreign);
      gpu_key = key;
    }
    last.upload_seconds = seconds_since(start);
    setup_seconds += last.upload_seconds;
    return true;
  }

  /// The Chebyshev polynomial of `degree` on the inner operator's spectrum, whose Lanczos estimate the first call
  /// for that operator finds on `space` and later calls reuse. Sets last.chebyshev, lanczos_seconds and products.
  const internal::ChebyshevPolynomial& polynomial_for(internal::BlockSpace& space, const InnerEntry& entry,
                                                      int degree) {
    const auto start = Clock::now();
    const std::int64_t products_before = space.counters().inner_products;
    auto known = spectrum.find(&entry.inner);
    if (known == spectrum.end() || !settings.reuse_spectrum)
      known = spectrum
                  .insert_or_assign(&entry.inner,
                                    internal::run_lanczos(space, lanczos_steps(), settings.polynomial.seed))
                  .first;
    internal::ChebyshevOptions options = settings.polynomial;
    options.degree = degree;
    last.chebyshev = internal::choose_chebyshev(known->second, entry.gershgorin, options);
    last.lanczos_seconds = seconds_since(start);
    last.lanczos_products = space.counters().inner_products - products_before;
    return last.chebyshev->polynomial;
  }

  template <typename Value>
  SolveReport solve_on_gpu(const Value* b, int ldb, Value* x, int ldx, int k, const SolveOptions& o, Stream stream);

  /// The space for the eigensolver (GPU or host), with the preconditioner it can use; the report's setup time.
  EigenReport eigen(double* x, int ldx, int k, const EigenOptions& o, Stream stream, bool on_host);

  /// The block iteration, on a space whose blocks `transfer` fills and empties.
  SolveReport run(internal::BlockSpace& space, internal::GpuBlockSpace* on_gpu, const InnerEntry& entry,
                  const SolveOptions& o, const BlockTransfer& transfer, bool new_space, double setup_seconds);
};

SpdSolver::SpdSolver(const CsrMatrix& a, const SpdOptions& options) : state_(std::make_unique<State>()) {
  State& st = *state_;
  st.options = options;
  if (a.rows != a.cols)
    throw InvalidArgument("SpdSolver: the matrix is " + std::to_string(a.rows) + " x " + std::to_string(a.cols) +
                          ": an SPD matrix is square");
  if (a.rows < 1) throw InvalidArgument("SpdSolver: the matrix is empty");
  if (!(options.symmetry_tolerance >= 0.0))
    throw InvalidArgument("SpdSolver: symmetry_tolerance must be >= 0");
  validate_csr(a);
  for (std::size_t p = 0; p < a.values.size(); ++p)
    if (!std::isfinite(a.values[p])) {
      std::int32_t row = 0;
      while (a.row_ptr[std::size_t(row) + 1] <= std::int32_t(p)) ++row;
      throw InvalidArgument("SpdSolver: entry (" + std::to_string(row) + ", " + std::to_string(a.col_idx[p]) +
                            ") is not finite");
    }
  const internal::Asymmetry asymmetry = internal::measure_asymmetry(a);
  if (asymmetry.ratio > options.symmetry_tolerance)
    throw NotSymmetricError("SpdSolver: the matrix is not symmetric: a(" + std::to_string(asymmetry.row) + ", " +
                            std::to_string(asymmetry.col) + ") = " + sci(asymmetry.a_ij) + " but a(" +
                            std::to_string(asymmetry.col) + ", " + std::to_string(asymmetry.row) + ") = " +
                            sci(asymmetry.a_ji) + ", a difference of " + sci(asymmetry.ratio) +
                            " relative to max(|a_ij|, |a_ji|, sqrt(|a_ii a_jj|)), above the symmetry tolerance " +
                            sci(options.symmetry_tolerance));
  st.asymmetry = asymmetry.ratio;
  st.a = asymmetry.ratio > 0.0 ? internal::symmetric_part(a) : a;
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
    share->rows = extract_rows(st.a, st.partition.begin(comm.rank), st.partition.end(comm.rank));
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
  st.last.preprocess_seconds = st.last.upload_seconds = 0.0;  // set below by what this solve makes
  const InnerEntry& entry = st.inner_for(o, setup_seconds);
  const bool new_space = st.ensure_space(false, k, st.settings.fcg.memory, entry, setup_seconds);
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
  st.last.preprocess_seconds = st.last.upload_seconds = 0.0;  // set below by what this solve makes
  const InnerEntry& entry = st.inner_for(o, setup_seconds);
  const bool new_space = st.ensure_space(true, k, st.settings.fcg.memory, entry, setup_seconds);
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

EigenReport SpdSolver::State::eigen(double* x, int ldx, int k, const EigenOptions& o, Stream stream, bool on_host) {
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
  // The preconditioner approximates A^-1: for the smallest eigenvalues of a matrix with a positive diagonal only.
  Preconditioner used = o.preconditioner;
  if (o.largest || !not_positive_definite.empty()) used = Preconditioner::none;
  SolveOptions as_solve;
  as_solve.preconditioner = used;
  as_solve.inner_precision = o.inner_precision;
  as_solve.chebyshev_degree = o.chebyshev_degree;
  double setup_seconds = 0.0;
  last.preprocess_seconds = last.upload_seconds = 0.0;
  const InnerEntry& entry = inner_for(as_solve, setup_seconds);
  ensure_space(on_host, k, internal::kLobpcgMemory, entry, setup_seconds);
  internal::GpuBlockSpace* gpu_space = on_host ? nullptr : gpu.get();
  internal::BlockSpace* space = on_host ? static_cast<internal::BlockSpace*>(cpu.get()) : gpu_space;
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
  return state_->eigen(x, ldx, k, options, stream, false);
}

EigenReport SpdSolver::eigenpairs_host(double* x, int ldx, int k, const EigenOptions& options) {
  return state_->eigen(x, ldx, k, options, nullptr, true);
}

namespace detail {

EngineSettings& SolverAccess::settings(SpdSolver& solver) { return solver.state_->settings; }
const LastSolve& SolverAccess::last(const SpdSolver& solver) { return solver.state_->last; }

}  // namespace detail

}  // namespace bcsr24::solvers
