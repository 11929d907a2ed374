// One row partition for every rank of a communicator, whatever the method: the contiguous split is computed by
// every rank alike (integer arithmetic), a METIS partition by rank 0 and broadcast. Used by
// DistributedOperator::from_global and by the distributed solver, whose vectors must follow the operator's rows.
#pragma once

#include <cstdint>
#include <vector>

#include "bcsr24/csr_matrix.hpp"
#include "bcsr24/distributed_partition.hpp"
#include "bcsr24/communicator.hpp"

namespace bcsr24::distributed {

/// partition_rows(a, comm.size, method, cost, new_to_old, &used), the same on every rank. Collective when the
/// method resolves to metis and comm.size > 1 (one NCCL broadcast); the checks every rank can make alone (square
/// A, METIS in this build) come before it, so no rank is left waiting.
/// @throw as partition_rows, on every rank; Error on every rank if METIS fails on rank 0; CudaError.
RowPartition agreed_partition(const CsrMatrix& a, const NcclCommunicator& comm, PartitionMethod method,
                              const detail::PartitionCost& cost, std::vector<std::int32_t>& new_to_old,
                              PartitionMethod& used);

}  // namespace bcsr24::distributed
