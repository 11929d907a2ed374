// The inside of an SpdSolver, shared by its two halves: spd_solver.cpp (the matrix checks and the linear solves)
// and spd_solver_eigen.cpp (the eigensolver). Not installed.
#pragma once

#include <chrono>
#include <cmath>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>

#include "bcsr24/solvers.hpp"
#include "block_lobpcg.hpp"
#include "rank_link.hpp"
#ifdef BCSR24_HAS_NCCL
#include "bcsr24/distributed_operator.hpp"
#endif
#include "sci_text.hpp"
#include "solver_access.hpp"

namespace bcsr24::solvers {

namespace internal = bcsr24::solver;

namespace impl {

using internal::sci;
using Clock = std::chrono::steady_clock;
using S = internal::BlockSlots;

inline double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

inline StopReason stop_reason(internal::BlockStop stop) {
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
inline double stored_relative_error(internal::InnerBackend backend, Precision precision) {
  if (backend == internal::InnerBackend::cusparse_csr_f32) return 1e-6;
  switch (precision) {
    case Precision::fp16: return 1e-3;
    case Precision::bf16: return 8e-3;
    case Precision::split: return 1e-6;
  }
  return 1e-2;
}

/// The first row whose diagonal is missing or not positive, as a message ("" when every a_ii > 0).
inline std::string non_positive_diagonal(const CsrMatrix& a) {
  for (std::int32_t i = 0; i < a.rows; ++i) {
    double d = 0.0;
    for (std::int32_t p = a.row_ptr[std::size_t(i)]; p < a.row_ptr[std::size_t(i) + 1]; ++p)
      if (a.col_idx[std::size_t(p)] == i) d = a.values[std::size_t(p)];
    if (!(d > 0.0))
      return "row " + std::to_string(i) + " has diagonal " + sci(d) + ": the matrix is not positive definite";
  }
  return "";
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

/// A matrix accepted as symmetric: its symmetric part and how far it was from it.
struct SymmetricMatrix {
  CsrMatrix matrix;
  double asymmetry = 0.0;
};

/// Checks that `a` is square, non-empty, valid, finite and symmetric to within `tolerance` (see SpdOptions) and
/// returns (A + A^T) / 2 (A itself when exactly symmetric). `who` starts every message ("SpdSolver: the matrix").
/// @throw InvalidArgument; NotSymmetricError naming the worst pair.
SymmetricMatrix checked_symmetric(const CsrMatrix& a, double tolerance, const std::string& who);

}  // namespace impl

using namespace impl;

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

  /// What a solve or an eigenvalue computation runs with (each call starts here): the inner operator for `o` and
  /// the GPU (on_host false) or host space for k columns and `memory`. last's preprocess and upload times count
  /// what this call makes; the time it takes is added to setup_seconds.
  struct Prepared {
    const InnerEntry& entry;
    bool new_space;  ///< the space was made anew
  };
  Prepared prepare(const SolveOptions& o, bool on_host, int k, int memory, double& setup_seconds) {
    last.preprocess_seconds = last.upload_seconds = 0.0;
    const InnerEntry& entry = inner_for(o, setup_seconds);
    return {entry, ensure_space(on_host, k, memory, entry, setup_seconds)};
  }

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
  /// `mass`: M of the generalized problem (null: the standard one).
  EigenReport eigen(const CsrMatrix* mass, double* x, int ldx, int k, const EigenOptions& o, Stream stream,
                    bool on_host);

  /// The block iteration, on a space whose blocks `transfer` fills and empties.
  SolveReport run(internal::BlockSpace& space, internal::GpuBlockSpace* on_gpu, const InnerEntry& entry,
                  const SolveOptions& o, const BlockTransfer& transfer, bool new_space, double setup_seconds);
};

}  // namespace bcsr24::solvers
