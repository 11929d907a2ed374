// The one call into METIS: k-way parts of a square matrix's rows. Compiled with METIS only when the library was
// configured with it (BCSR24_HAS_METIS); otherwise metis_row_parts throws NotSupported.
#pragma once

#include <cstdint>
#include <vector>

#include "bcsr24/csr_matrix.hpp"
#include "bcsr24/distributed_partition.hpp"

namespace bcsr24::distributed {

/// Fixed METIS seed: every rank (and every run) that partitions the same matrix gets the same parts.
constexpr int kMetisSeed = 54;

/// The part (0 .. ranks-1) of every row of the square `a`: METIS_PartGraphKway on the graph of A + A^T without
/// its diagonal, minimising the total communication volume (the sum over ranks of the foreign rows a rank's rows
/// touch, which is exactly the sum of the halo rows), each vertex weighted by its row's bytes under `cost`.
/// Preconditions (checked by partition_rows): a square and valid, ranks >= 2, a.rows > ranks.
/// @throw NotSupported without METIS in this build; SizeLimitError when the graph does not fit METIS's 32-bit
///        indices; Error when METIS reports a failure.
std::vector<std::int32_t> metis_row_parts(const CsrMatrix& a, int ranks, const detail::PartitionCost& cost);

}  // namespace bcsr24::distributed
