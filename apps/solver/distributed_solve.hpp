// bcsr24_solve --gpus P / --mpi: the same solver with A, every block and every product spread by rows over P GPUs
// (one NCCL rank per GPU: a thread of this process each, or one MPI process each). Built only with NCCL.
#pragma once

#include <cstdint>
#include <vector>

#include "bcsr24/distributed_partition.hpp"
#include "flexible_cg.hpp"
#include "gpu_system.hpp"
#include "problem.hpp"
#include "rank_session.hpp"

namespace bcsr24::solver {

struct DistributedSolveSettings {
  int gpus = 1;  ///< thread launch: ranks on devices 0 .. gpus-1 of this process
  /// MPI launch (--mpi): this process's rank of the session (select_devices done); `gpus` is then not used.
  /// Every process calls solve_distributed with the same problem and settings.
  const ranks::Session* mpi_session = nullptr;
  InnerBackend backend = InnerBackend::bcsr24;
  bool jacobi_scaling = false;       ///< the inner solve works on D^-1/2 A D^-1/2
  OperatorOptions operator_options;  ///< each rank's bcsr24 parts (precision, layout)
  /// How rows are assigned to ranks. METIS renumbers the system (P A P^T, P b) before the solve and the solution
  /// back after it; every process computes the same partition (deterministic METIS, fixed seed).
  PartitionMethod partition = PartitionMethod::automatic;
  OuterOptions outer;
  InnerOptions inner;
  OuterObserver observer;            ///< called on rank 0 only
};

/// One rank's figures.
struct RankSolveStats {
  std::int32_t rank = 0, row_begin = 0, rows = 0;
  std::int32_t halo_rows = 0, send_rows = 0;  ///< vector rows received / sent per product
  std::int64_t nnz = 0, device_bytes = 0;
  std::int32_t outer_iterations = 0;  ///< each rank's own count: they must agree
  double preprocess_seconds = 0.0, upload_seconds = 0.0, solve_seconds = 0.0;
  GpuTimings timings;
};

/// Under MPI only the root process (rank 0) receives `x`, `ranks` and the figures derived from them; every process
/// gets its own rank's `result`.
struct DistributedSolveResult {
  OuterResult result;               ///< rank 0's (every rank takes the same decisions from the same sums)
  std::vector<double> x;            ///< the whole solution, n x k row-major
  std::vector<RankSolveStats> ranks;
  double solve_seconds = 0.0;       ///< the slowest rank's
  double preprocess_seconds = 0.0;  ///< the slowest rank's share of the inner matrix (host conversion + upload)
  double upload_seconds = 0.0;
  GpuTimings timings;               ///< per category, the slowest rank's
  std::int64_t max_device_bytes = 0;
  bool ranks_agree = true;          ///< every rank made the same number of outer iterations
  PartitionMethod partition = PartitionMethod::contiguous;  ///< the method that assigned the rows
};

/// Solves on `settings.gpus` GPUs (devices 0 .. gpus-1), or on the MPI session's ranks. The rows are split by balanced stored bytes; the inner
/// matrix is converted by every rank for its own rows (bcsr24::DistributedOperator) or kept as CSR rows
/// (cuSPARSE fp32).
/// @throw NotSupported with fewer GPUs than asked, or an MPI session in a build without MPI; Error naming the
///        rank that failed.
DistributedSolveResult solve_distributed(const Problem& problem, const DistributedSolveSettings& settings);

}  // namespace bcsr24::solver
