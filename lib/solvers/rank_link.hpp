// What the GPU block space needs to run on one rank of several (one GPU each, rows of A and of every block split
// between them): sums of the small buffer over ranks, the fp64 product of this rank's rows (halo exchanged), the
// inner operator's product, and the global numbering of the rank's rows. No NCCL types here: the one implementation
// (nccl_rank_link.cpp, built with NCCL) hides them, and a space without a link is the single-GPU space, so P = 1
// and P > 1 run the same code.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "bcsr24/spmm_plan.hpp"  // Stream
#include "gpu_block_space.hpp"   // ForeignProduct
#include "inner_matrix.hpp"

namespace bcsr24::solver {

class RankLink {
 public:
  virtual ~RankLink() = default;
  virtual int rank() const = 0;
  virtual int ranks() const = 0;
  /// Rows of A (and of every block) this rank owns.
  virtual std::int32_t rows() const = 0;
  /// For every row of this rank, its index in the caller's numbering: the Lanczos start vectors are drawn from it,
  /// so that they (and the spectrum estimate) are those of the single-GPU solve.
  virtual const std::vector<std::int32_t>& caller_rows() const = 0;
  /// Replaces `count` doubles at `device` (device memory) by their sum over ranks, enqueued on `stream`: every
  /// rank then holds the same numbers and takes the same decisions.
  virtual void sum(double* device, std::int64_t count, Stream stream) = 0;
  /// c = alpha A_rank b + beta c in fp64 for row-major blocks of `width` columns (leading dimension = width): b is
  /// this rank's rows, its halo rows are exchanged during the local part's product. Enqueued on `stream`.
  virtual std::unique_ptr<ForeignProduct> outer_product(int width, Stream stream) = 0;
  /// The inner operator's product on fp32 blocks of `width` columns (inner.distributed: this rank's share).
  virtual std::unique_ptr<ForeignProduct> inner_product(const InnerMatrix& inner, int width, Stream stream) = 0;
  /// The local part of this rank's rows (columns renumbered from the rank's first row: its diagonal is the
  /// matrix's), for the space's diagonal.
  virtual const CsrMatrix& local_part() const = 0;
};

}  // namespace bcsr24::solver
