// The block solver on several GPUs for bcsr24_solve (distributed_block_run.hpp): each rank builds SpdSolver on the
// whole matrix with its communicator, solves for its rows of b, and rank 0 gathers x into the file's numbering.
#include "distributed_block_run.hpp"

#include <algorithm>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include <cuda_runtime_api.h>

#include "bcsr24/error.hpp"
#include "bcsr24/solvers.hpp"
#include "cuda_resources.hpp"
#include "rank_group.hpp"

namespace bcsr24::solver {

namespace {

/// Exit status when rank threads are left stuck after a failure (bcsr24_solve's runtime-error status).
constexpr int kExitStuck = 1;

struct RankFigures {
  std::int32_t rows = 0, halo_rows = 0, iterations = 0;
  std::int64_t nnz = 0;
  double solve_seconds = 0.0;
};
static_assert(std::is_trivially_copyable_v<RankFigures>, "RankFigures travels as bytes");

/// This rank's stored entries and halo rows (the distinct columns of its rows that other ranks own), from the
/// caller-numbered matrix and the solver's numbering.
RankFigures rank_figures(const CsrMatrix& a, const RowPartition& rows, const std::vector<std::int32_t>& order,
                         int rank) {
  RankFigures f;
  const std::int32_t begin = rows.begin(rank), end = rows.end(rank);
  std::vector<std::int32_t> position(std::size_t(a.rows));  // caller row -> solver row
  for (std::int32_t i = 0; i < a.rows; ++i) position[std::size_t(order.empty() ? i : order[std::size_t(i)])] = i;
  std::vector<char> seen(std::size_t(a.rows), 0);
  for (std::int32_t i = begin; i < end; ++i) {
    const std::int32_t row = order.empty() ? i : order[std::size_t(i)];
    for (std::int32_t p = a.row_ptr[std::size_t(row)]; p < a.row_ptr[std::size_t(row) + 1]; ++p) {
      const std::int32_t j = position[std::size_t(a.col_idx[std::size_t(p)])];
      if ((j < begin || j >= end) && !seen[std::size_t(j)]) {
        seen[std::size_t(j)] = 1;
        ++f.halo_rows;
      }
      ++f.nnz;
    }
  }
  f.rows = end - begin;
  return f;
}

}  // namespace

BlockRunReport run_block_solver_distributed(const Problem& problem, const BlockRunSettings& settings, int gpus,
                                            const ranks::Session* mpi, PartitionMethod partition,
                                            DistributedBlockFigures& figures) {
  if (mpi && mpi->launch() != ranks::Launch::mpi) throw InvalidArgument("distributed block run: not an MPI session");
  if (settings.device != "gpu") throw InvalidArgument("the distributed block solver runs on GPUs (--device gpu)");
  if (!mpi) {
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess) devices = 0;
    if (gpus < 1 || gpus > devices)
      throw NotSupported("--gpus " + std::to_string(gpus) + ": this machine has " + std::to_string(devices) +
                         " CUDA device(s)");
  }
  const int k = problem.k;
  BlockRunReport out;
  out.settings = settings;
  out.label = block_label(settings) + (mpi ? ", MPI ranks" : ", GPU threads");
  figures.launch = mpi ? "mpi" : "threads";

  const ranks::RankFunction rank_solve = [&](ranks::HostGroup& group, ncclComm_t comm, int device) {
    ranks::CommunicatorGuard guard(comm);  // first: destroyed after the solver below
    if (cudaSetDevice(device) != cudaSuccess) throw CudaError("cudaSetDevice(" + std::to_string(device) + ") failed");
    const int rank = group.rank();
    solvers::SpdOptions spd;
    spd.partition = partition;
    solvers::SpdSolver solver(problem.a, NcclCommunicator{comm, rank, group.size()}, spd);
    configure_solver(solver, settings, rank == 0);
    const RowPartition& rows = solver.row_partition();
    const std::vector<std::int32_t>& order = solver.row_order();

    std::vector<double> b_mine(std::size_t(rows.count(rank)) * std::size_t(k));
    take_rank_rows(problem.b.data(), k, k, rows, order, rank, b_mine.data(), k);
    const std::size_t bytes = b_mine.size() * sizeof(double);
    bench::DeviceBuffer b(bytes), x_device(bytes);
    bench::check_cuda(cudaMemcpy(b.get(), b_mine.data(), bytes, cudaMemcpyHostToDevice), "cudaMemcpy", __FILE__,
                      __LINE__);
    group.barrier();  // every rank starts the clock together
    const solvers::SolveReport solved = solver.solve(static_cast<const double*>(b.get()), k,
                                                     static_cast<double*>(x_device.get()), k, k,
                                                     solve_options(settings));
    std::vector<double> x_mine(b_mine.size());
    bench::check_cuda(cudaMemcpy(x_mine.data(), x_device.get(), bytes, cudaMemcpyDeviceToHost), "cudaMemcpy",
                      __FILE__, __LINE__);

    RankFigures mine = rank_figures(solver.matrix(), rows, order, rank);
    mine.iterations = solved.iterations;
    mine.solve_seconds = solved.seconds;
    std::vector<unsigned char> all;
    group.gather(&mine, sizeof mine, all);
    std::vector<double> x_solver;  // rank 0: the whole x in the solver's numbering
    ranks::gather_rows(group, x_mine, rows, k, x_solver);
    if (rank == 0) {
      std::vector<double> x(x_solver.size());
      for (int q = 0; q < group.size(); ++q)
        put_rank_rows(x_solver.data() + std::size_t(rows.begin(q)) * std::size_t(k), k, k, rows, order, q, x.data(),
                      k);
      fill_block_report(out, solver, solved, problem, x);
      figures.ranks = group.size();
      figures.partition = order.empty() ? PartitionMethod::contiguous : PartitionMethod::metis;
      figures.rows.clear();
      figures.halo_rows.clear();
      figures.nnz.clear();
      figures.iterations.clear();
      figures.max_solve_seconds = 0.0;
      for (int q = 0; q < group.size(); ++q) {
        RankFigures f;
        std::memcpy(&f, all.data() + std::size_t(q) * sizeof f, sizeof f);
        figures.rows.push_back(f.rows);
        figures.halo_rows.push_back(f.halo_rows);
        figures.nnz.push_back(f.nnz);
        figures.iterations.push_back(f.iterations);
        figures.max_solve_seconds = std::max(figures.max_solve_seconds, f.solve_seconds);
      }
      out.solve_seconds = figures.max_solve_seconds;
    } else if (mpi) {
      fill_block_report(out, solver, solved, problem, {});  // this process's own record
    }
    group.barrier();  // nothing below may fail on one rank alone
    guard.finished_cleanly();
  };
  if (mpi) {
#ifdef BCSR24_HAS_MPI
    ranks::run_mpi_rank(*mpi, rank_solve);
#else
    throw NotSupported("an MPI session in a build without MPI");
#endif
  } else {
    ranks::run_rank_threads(gpus, rank_solve, "bcsr24_solve", kExitStuck);
  }
  return out;
}

}  // namespace bcsr24::solver
