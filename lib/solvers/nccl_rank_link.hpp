// The RankLink of one NCCL rank (built with NCCL only: BCSR24_HAS_NCCL).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "bcsr24/csr_matrix.hpp"
#include "bcsr24/distributed_partition.hpp"
#include "bcsr24/communicator.hpp"
#include "rank_link.hpp"

namespace bcsr24::solver {

/// Collective: every rank of `comm` makes its link at the same time (the fp64 halo exchange learns its send plan).
/// @param rows_of_rank this rank's rows of A in the solver's numbering (global columns in that numbering)
/// @param rows the partition of that numbering (the same on every rank); a rank without rows is refused
/// @param order solver row -> caller row (empty: the same numbering)
/// @throw InvalidArgument for a rank without rows or inconsistent sizes; CudaError.
std::unique_ptr<RankLink> make_nccl_rank_link(const CsrMatrix& rows_of_rank, const RowPartition& rows,
                                              const std::vector<std::int32_t>& order, const NcclCommunicator& comm);

}  // namespace bcsr24::solver
