// BlockSpace on one GPU: fp64 slots with CSR fp64 products (the space's own kernel, or cuSPARSE), fp32 Chebyshev and Lanczos blocks with the
// inner operator (bcsr24 SpmmPlan, or cuSPARSE CSR fp32 for the comparison), the small buffer in device memory and
// one stream; the host waits only in read_small (the status read) and slot reads. No CUDA headers here.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "bcsr24/spmm_plan.hpp"  // Stream
#include "block_space.hpp"
#include "inner_matrix.hpp"

namespace bcsr24::solver {

/// Device time per kind of work, from CUDA events around each enqueued operation (0 with timing off).
struct BlockTimings {
  double inner_product_ms = 0.0;  ///< the inner operator's products (bcsr24 SpmmPlan::run or cuSPARSE fp32)
  double outer_product_ms = 0.0;  ///< CSR fp64 products (directions, residuals)
  double vector_ms = 0.0;         ///< Chebyshev and Lanczos vector kernels, conversions, PCG vector kernels
  double block_ms = 0.0;          ///< Gram matrices, block combinations, column dots, small steps
  double total_ms() const { return inner_product_ms + outer_product_ms + vector_ms + block_ms; }
};

/// Who computes the fp64 products A P and B - A X: the space's CSR kernel (block_gpu::csr_product: a row per 8 to
/// 32 lanes, in stored order) or cuSPARSE's SpMM (the baseline's standard practice).
enum class OuterProduct { csr_kernel, cusparse };
const char* outer_product_name(OuterProduct product) noexcept;

/// A product the space runs through another library: c = alpha A b + beta c on row-major blocks of a fixed width,
/// enqueued on the stream it was made for. bcsr24_solve's comparisons make them with cuSPARSE
/// (cusparse_support.hpp); the library never does, so libbcsr24_solvers needs no cuSPARSE.
class ForeignProduct {
 public:
  virtual ~ForeignProduct() = default;
  virtual void run(const void* b, void* c, double alpha, double beta) = 0;
  /// Whether run_with_addends works (bcsr24's distributed plan: fp32 blocks, SpmmPlan's addends in its epilogue);
  /// otherwise the space adds the Chebyshev terms in a second pass.
  virtual bool takes_addends() const { return false; }
  /// c = alpha A b + beta c + the addends, in the product's own pass.
  virtual void run_with_addends(const void* b, void* c, double alpha, double beta, const OutputAddend* addends,
                                int count) {
    (void)b, (void)c, (void)alpha, (void)beta, (void)addends, (void)count;
    throw NotSupported("this product takes no addends");
  }
  virtual std::int64_t bytes() const = 0;  ///< device memory it holds (matrix copy, workspace)
};

/// What a foreign product is made for: A (fp64 values, or rounded to fp32), blocks of `width` columns (row-major,
/// leading dimension = width; any_b and any_c are blocks of that shape, for the workspace query), the stream.
struct ForeignProductRequest {
  const CsrMatrix* matrix = nullptr;
  bool fp32 = false;
  int width = 0;
  const void* any_b = nullptr;
  void* any_c = nullptr;
  Stream stream = nullptr;
};
using ForeignProducts = std::function<std::unique_ptr<ForeignProduct>(const ForeignProductRequest&)>;

class RankLink;  // rank_link.hpp: the space on one rank of several GPUs

class GpuBlockSpace final : public BlockSpace {
 public:
  /// Uploads A (fp64 CSR) and the inner matrix and allocates every block; nothing is allocated afterwards.
  /// @param inner kept by reference: must outlive the space
  /// @param timing CUDA events around every operation (BlockTimings); off: only counts
  /// @param outer who computes the fp64 products
  /// @param foreign makes the cuSPARSE products of OuterProduct::cusparse and InnerBackend::cusparse_csr_f32
  /// @param link on one rank of several: `a` is then the rank's local part (link->local_part()), the products are
  ///        the link's (outer is ignored), every reduction is summed over the ranks, and the Lanczos start vectors
  ///        follow the caller's numbering; null: the whole A on this GPU. Kept by reference.
  /// @throw NotSupported without a usable GPU, or for a cuSPARSE product without `foreign`; InvalidArgument as
  ///        CpuBlockSpace; CudaError.
  GpuBlockSpace(const CsrMatrix& a, const InnerMatrix& inner, int k, int memory, int lanczos_steps,
                bool timing = true, OuterProduct outer = OuterProduct::csr_kernel,
                const ForeignProducts& foreign = {}, RankLink* link = nullptr);
  ~GpuBlockSpace() override;
  GpuBlockSpace(const GpuBlockSpace&) = delete;
  GpuBlockSpace& operator=(const GpuBlockSpace&) = delete;

  int k() const override;
  std::int32_t rows() const override;
  const small::SmallLayout& layout() const override;
  BCSR24_BLOCK_SPACE_OPERATIONS
  SpaceCounters counters() const override;

  /// A slot from a caller's device block, n x k row-major with row stride ld (fp64, or fp32 widened), enqueued.
  void load_slot(int slot, const double* source, int ld);
  void load_slot(int slot, const float* source, int ld);
  /// A slot into a caller's device block (row stride ld; fp32 rounded once), enqueued.
  void store_slot(int slot, double* destination, int ld);
  void store_slot(int slot, float* destination, int ld);
  /// Orders the space's stream after what `caller` holds now (a cudaStream_t; null: the legacy default stream).
  void wait_for(Stream caller);
  /// Orders `caller` after what the space's stream holds now.
  void release_to(Stream caller);

  /// Waits for the stream and folds finished event timings in (not counted as an algorithm's synchronisation).
  void synchronize();
  BlockTimings timings() const;
  void reset_timings();
  /// Device memory of the space (blocks, fp64 CSR, cuSPARSE workspaces, the bcsr24 plan's workspace; not the bcsr24
  /// operator's tile lists, which the operator owns).
  std::int64_t device_bytes() const;
  /// How the bcsr24 plan splits the inner product between tiles and the CSR kernel (empty for cuSPARSE fp32).
  std::string plan_summary() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace bcsr24::solver
