// The distributed solve: one rank per GPU (a thread of this process, or an MPI process), each building its share of A and of the inner matrix and running the
// unchanged flexible CG / block CG on a GpuSystem of its rows; the sums inside the space keep the ranks in step.
#include "distributed_solve.hpp"

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>

#include <cuda_runtime_api.h>

#include "bcsr24/distributed_operator.hpp"
#include "bcsr24/error.hpp"
#include "rank_group.hpp"
#include "text_report.hpp"

namespace bcsr24::solver {

namespace {

static_assert(std::is_trivially_copyable_v<RankSolveStats>, "RankSolveStats travels as bytes");

/// Exit status when rank threads are left stuck after a failure (bcsr24_solve's runtime-error status).
constexpr int kExitStuck = 1;

template <typename T>
std::vector<T> rows_of(const std::vector<T>& all, const RowPartition& rows, int rank, std::size_t width) {
  return std::vector<T>(all.begin() + std::ptrdiff_t(std::size_t(rows.begin(rank)) * width),
                        all.begin() + std::ptrdiff_t(std::size_t(rows.end(rank)) * width));
}

}  // namespace

DistributedSolveResult solve_distributed(const Problem& problem, const DistributedSolveSettings& settings) {
  const ranks::Session* mpi = settings.mpi_session;
  if (mpi && mpi->launch() != ranks::Launch::mpi) throw InvalidArgument("solve_distributed: not an MPI session");
  const int gpus = mpi ? mpi->ranks() : settings.gpus;
  if (!mpi) {
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess) devices = 0;
    if (gpus < 1 || gpus > devices)
      throw NotSupported("--gpus " + std::to_string(gpus) + ": this machine has " + std::to_string(devices) +
                         " CUDA device(s)");
  }
  const int k = problem.k;
  // Rows assigned by the method asked for, balanced by the bytes they store (bcsr24's device bytes per entry and
  // per row); the same partition for A's columns and every vector. The inner matrix has A's structure, so one
  // partition serves both. A METIS partition renumbers rows so that each rank's are contiguous: the solve then
  // runs on P A P^T and P b, and x is numbered back once at the end.
  std::vector<std::int32_t> order;
  PartitionMethod used = PartitionMethod::contiguous;
  const RowPartition rows = partition_rows(problem.a, gpus, settings.partition, DistributedOptions{}.cost, order, &used);
  CsrMatrix renumbered_a;
  std::vector<double> renumbered_b;
  if (used != PartitionMethod::contiguous) {
    renumbered_a = extract_permuted_rows(problem.a, order, invert_permutation(order), 0, problem.a.rows);
    renumbered_b.resize(problem.b.size());
    for (int r = 0; r < gpus; ++r)
      take_rank_rows(problem.b.data(), k, k, rows, order, r, renumbered_b.data() + std::size_t(rows.begin(r)) * k, k);
  }
  const CsrMatrix& a = used != PartitionMethod::contiguous ? renumbered_a : problem.a;
  const std::vector<double>& b = used != PartitionMethod::contiguous ? renumbered_b : problem.b;
  std::vector<double> scale;
  CsrMatrix scaled;
  if (settings.jacobi_scaling) {
    scale = jacobi_scale(a);
    scaled = scale_symmetric(a, scale);
  }
  const CsrMatrix& inner_source = settings.jacobi_scaling ? scaled : a;
  const int slots = outer_slot_count(settings.outer.memory);

  DistributedSolveResult out;
  const ranks::RankFunction rank_solve = [&](ranks::HostGroup& group, ncclComm_t comm, int device) {
    ranks::CommunicatorGuard guard(comm);  // first: destroyed after the space and the operator below
    if (cudaSetDevice(device) != cudaSuccess) throw CudaError("cudaSetDevice(" + std::to_string(device) + ") failed");
    const int rank = group.rank();
    RankShare share;
    share.comm = NcclCommunicator{comm, rank, group.size()};
    share.rows = rows;
    RankSolveStats stats;
    stats.rank = rank;
    stats.row_begin = rows.begin(rank);
    stats.rows = rows.count(rank);

    const bench::Stopwatch prepare_watch;
    const CsrMatrix a_rows = extract_rows(a, rows.begin(rank), rows.end(rank));
    stats.nnz = a_rows.nnz();
    InnerMatrix inner;
    inner.backend = settings.backend;
    if (settings.jacobi_scaling) inner.row_scale = rows_of(scale, rows, rank, 1);
    if (settings.backend == InnerBackend::bcsr24) {
      DistributedOptions options;
      options.part = settings.operator_options;
      inner.distributed = std::make_shared<const DistributedOperator>(DistributedOperator::from_rank_rows(
          extract_rows(inner_source, rows.begin(rank), rows.end(rank)), rows, rows, share.comm, options));
    } else {
      inner.csr = extract_rows(inner_source, rows.begin(rank), rows.end(rank));
    }
    stats.preprocess_seconds = prepare_watch.seconds();

    const bench::Stopwatch upload_watch;
    GpuSystem space(a_rows, inner, k, slots, share);
    space.set_slot(OuterSlots::b, rows_of(b, rows, rank, std::size_t(k)));
    stats.upload_seconds = upload_watch.seconds();
    stats.device_bytes = space.device_bytes();
    stats.halo_rows = space.halo_rows();
    stats.send_rows = space.send_rows();
    // NCCL connects the ranks for a collective at its first call: one untimed all-reduce (the dot products
    // of b) keeps that out of the solve time. The halo exchange's connections were made at construction.
    std::vector<double> warm;
    space.dots({{OuterSlots::b, OuterSlots::b}}, warm);
    space.synchronize();
    group.barrier();  // every rank starts the clock together

    const bench::Stopwatch solve_watch;
    const OuterResult result =
        flexible_cg(space, settings.outer, settings.inner, rank == 0 ? settings.observer : OuterObserver{});
    space.synchronize();
    stats.solve_seconds = solve_watch.seconds();
    stats.timings = space.timings();
    stats.outer_iterations = result.outer_iterations;

    std::vector<double> x;
    ranks::gather_rows(group, space.slot(OuterSlots::x), rows, k, x);
    std::vector<unsigned char> all;
    group.gather(&stats, sizeof stats, all);
    // Under MPI each process keeps its own result (the same decisions); the threads share `out`.
    if (mpi || rank == 0) out.result = result;
    if (rank == 0) {
      if (!order.empty() && used != PartitionMethod::contiguous) {  // back to the file's numbering
        out.x.assign(x.size(), 0.0);
        for (int q = 0; q < group.size(); ++q)
          put_rank_rows(x.data() + std::size_t(rows.begin(q)) * std::size_t(k), k, k, rows, order, q, out.x.data(), k);
      } else {
        out.x = std::move(x);
      }
      out.ranks.resize(std::size_t(group.size()));
      std::memcpy(out.ranks.data(), all.data(), all.size());
    }
    group.barrier();  // nothing below may fail on one rank alone
    guard.finished_cleanly();
  };
  if (mpi) {
#ifdef BCSR24_HAS_MPI
    ranks::run_mpi_rank(*mpi, rank_solve);
#else
    throw NotSupported("solve_distributed: an MPI session in a build without MPI");
#endif
  } else {
    ranks::run_rank_threads(gpus, rank_solve, "bcsr24_solve", kExitStuck);
  }

  out.partition = used;
  for (const RankSolveStats& r : out.ranks) {
    out.solve_seconds = std::max(out.solve_seconds, r.solve_seconds);
    out.preprocess_seconds = std::max(out.preprocess_seconds, r.preprocess_seconds);
    out.upload_seconds = std::max(out.upload_seconds, r.upload_seconds);
    out.timings.inner_spmm_ms = std::max(out.timings.inner_spmm_ms, r.timings.inner_spmm_ms);
    out.timings.outer_spmm_ms = std::max(out.timings.outer_spmm_ms, r.timings.outer_spmm_ms);
    out.timings.inner_products = std::max(out.timings.inner_products, r.timings.inner_products);
    out.timings.outer_products = std::max(out.timings.outer_products, r.timings.outer_products);
    out.max_device_bytes = std::max(out.max_device_bytes, r.device_bytes);
    out.ranks_agree = out.ranks_agree && r.outer_iterations == out.result.outer_iterations;
  }
  return out;
}

}  // namespace bcsr24::solver
