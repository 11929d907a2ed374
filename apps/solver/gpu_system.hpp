// The solver spaces on the GPU: fp64 outer blocks with cuSPARSE CSR fp64 products, fp32 inner blocks with
// cuBLAS block operations and either bcsr24 (fp16 A) or cuSPARSE CSR fp32 products. No CUDA headers here.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "bcsr24/distributed_partition.hpp"
#include "bcsr24/halo_exchange.hpp"  // NcclCommunicator; the distributed calls need a build with NCCL
#include "flexible_cg.hpp"
#include "problem.hpp"

namespace bcsr24::solver {

/// Device time measured with CUDA events around the products.
struct GpuTimings {
  double inner_spmm_ms = 0.0;     ///< the multiply alone: SpmmPlan::run (bcsr24) or cusparseSpMM (fp32)
  double outer_spmm_ms = 0.0;     ///< cuSPARSE CSR fp64 products of the outer iteration and true residuals
  std::int64_t inner_products = 0;
  std::int64_t outer_products = 0;
};

/// This rank's place in a system distributed by rows over several GPUs (one rank per GPU): the communicator the
/// caller made and the row partition, which is also the partition of A's columns and of every vector's rows.
struct RankShare {
  NcclCommunicator comm;
  RowPartition rows;
};

class GpuSystem final : public OuterSpace {
 public:
  /// Uploads A (fp64 CSR), the inner matrix (the bcsr24 operator's device copy, or fp32 CSR) and allocates
  /// every block; nothing is allocated afterwards.
  /// @param inner kept by reference: must outlive the space
  /// @throw NotSupported without a usable GPU; CudaError / CusparseError on failures.
  GpuSystem(const CsrMatrix& a, const InnerMatrix& inner, int k, int slots);
  /// This rank's share of a system spread over several GPUs. a_rows: its rows of A (share.rows.count(rank) rows,
  /// global columns); inner: its share of the inner matrix (InnerMatrix::distributed for bcsr24, or its rows of
  /// the inner matrix in `csr` for cuSPARSE fp32; row_scale its rows). Slots hold its rows. Products exchange
  /// halo rows over NCCL, dot products and Gram matrices are summed over the ranks (NCCL all-reduce), so every
  /// rank sees the same numbers and takes the same decisions. Construction and every operation are collective.
  /// `share` and `inner` must outlive the space.
  /// @throw NotSupported in builds without NCCL; InvalidArgument for a rank without rows or inconsistent shares.
  GpuSystem(const CsrMatrix& a_rows, const InnerMatrix& inner, int k, int slots, const RankShare& share);
  ~GpuSystem() override;
  GpuSystem(const GpuSystem&) = delete;
  GpuSystem& operator=(const GpuSystem&) = delete;

  void set_slot(int slot, const std::vector<double>& values);
  std::vector<double> slot(int slot);
  /// Waits for all enqueued work and folds finished event timings into timings().
  void synchronize();
  GpuTimings timings() const;
  std::int64_t device_bytes() const;
  /// Vector rows this rank receives from / sends to its peers per product (0 on one GPU).
  std::int32_t halo_rows() const;
  std::int32_t send_rows() const;

  int k() const override;
  BCSR24_OUTER_SPACE_OPERATIONS

 private:
  void init(const CsrMatrix& a_local, const CsrMatrix* a_halo, const std::vector<double>& inverse_diagonal,
            const InnerMatrix& inner, int k, int slots, const CsrMatrix* inner_local = nullptr,
            const CsrMatrix* inner_halo = nullptr);
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace bcsr24::solver
