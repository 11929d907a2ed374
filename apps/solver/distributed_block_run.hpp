// bcsr24_solve --solver block --gpus P / --mpi: bcsr24::solvers::SpdSolver made with an NCCL communicator, one rank
// per GPU (a thread of this process each, or one MPI process each), each solving for its rows; x gathered on rank 0
// and checked on the host in fp64 as on one GPU. Built only with NCCL.
#pragma once

#include <cstdint>
#include <vector>

#include "bcsr24/distributed_partition.hpp"
#include "block_runs.hpp"
#include "problem.hpp"
#include "rank_session.hpp"

namespace bcsr24::solver {

/// What the ranks of a distributed block run did, besides the block run's own report (rank 0's).
struct DistributedBlockFigures {
  int ranks = 0;
  const char* launch = "threads";
  PartitionMethod partition = PartitionMethod::contiguous;  ///< the method that assigned the rows
  std::vector<std::int32_t> rows, halo_rows;                ///< per rank
  std::vector<std::int64_t> nnz;                            ///< per rank: stored entries of its rows
  std::vector<std::int32_t> iterations;                     ///< per rank: they must agree
  double max_solve_seconds = 0.0;                           ///< the slowest rank's time to solution
};

/// Solves on `gpus` GPUs of this process (threads) or on the MPI session's ranks. Collective under MPI. On rank 0
/// (the root process) the report holds the host check of the gathered x; elsewhere it holds the rank's own solve.
/// @throw NotSupported with fewer GPUs than asked; Error naming the rank that failed.
BlockRunReport run_block_solver_distributed(const Problem& problem, const BlockRunSettings& settings, int gpus,
                                            const ranks::Session* mpi, PartitionMethod partition,
                                            DistributedBlockFigures& figures);

}  // namespace bcsr24::solver
