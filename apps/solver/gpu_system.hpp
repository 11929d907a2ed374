// The solver spaces on the GPU: fp64 outer blocks with cuSPARSE CSR fp64 products, fp32 inner blocks with
// cuBLAS block operations and either bcsr24 (fp16 A) or cuSPARSE CSR fp32 products. No CUDA headers here.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

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

class GpuSystem final : public OuterSpace {
 public:
  /// Uploads A (fp64 CSR), the inner matrix (the bcsr24 operator's device copy, or fp32 CSR) and allocates
  /// every block; nothing is allocated afterwards.
  /// @param inner kept by reference: must outlive the space
  /// @throw NotSupported without a usable GPU; CudaError / CusparseError on failures.
  GpuSystem(const CsrMatrix& a, const InnerMatrix& inner, int k, int slots);
  ~GpuSystem() override;
  GpuSystem(const GpuSystem&) = delete;
  GpuSystem& operator=(const GpuSystem&) = delete;

  void set_slot(int slot, const std::vector<double>& values);
  std::vector<double> slot(int slot);
  /// Waits for all enqueued work and folds finished event timings into timings().
  void synchronize();
  GpuTimings timings() const;
  std::int64_t device_bytes() const;

  int k() const override;
  void residual(int r, int b, int x) override;
  void multiply(int q, int p) override;
  void dots(const std::vector<std::pair<int, int>>& pairs, std::vector<double>& out) override;
  void combine(int dst, int z, const std::vector<int>& p, const std::vector<double>& coef) override;
  void update(int x, int p, int r, int q, const std::vector<double>& alpha) override;
  InnerStats precondition_inner(int z, int r, const std::vector<double>& column_scale,
                                const InnerOptions& options) override;
  void precondition_jacobi(int z, int r, const std::vector<double>& column_mask) override;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace bcsr24::solver
