// Kernels of the GPU block space (gpu_block_space.cpp): Gram matrices and combinations of n x k fp64 blocks with
// k x k matrices, the small-algebra steps (one thread block running small_algebra.hpp), the conversions and the
// update of the Chebyshev recurrence in fp32, the Lanczos vectors, the fp64 CSR product, and the fused vector
// operations of the PCG baseline. Row-major blocks; every reduction is two passes in a fixed order, so results do not vary run to run.
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

#include "small_algebra.hpp"

namespace bcsr24::solver::block_gpu {

/// Thread blocks of a reduction's first pass (partial sums per block, added in block order by the second).
inline constexpr int kReductionBlocks = 528;
/// Most terms of one combine.
inline constexpr int kMaxTerms = small::kMaxMemory + 2;

/// Right blocks one Gram launch handles (the left block is read once for all of them).
inline constexpr int kGramRights = 2;

/// Doubles of reduction workspace a space needs for k columns (Gram: 2 k^2 outputs; fused sums: 2 k).
std::int64_t reduction_workspace(int k);

/// outs[i] (k x k, column-major) = left^T rights[i] for i < count (1 or 2) and n x k row-major blocks, in one pass
/// over left; outs may point into the small buffer. A right block equal to left is read once.
void gram(const double* left, const double* const* rights, double* const* outs, int count, std::int32_t n, int k,
          double* workspace, cudaStream_t stream);

/// out[j] = sum_i x[i * ld + j] y[i * ld + j] for j < k, accumulated in double (T = double or float).
template <typename T>
void column_dots(const T* x, const T* y, std::int32_t n, int k, std::int64_t ld, double* workspace, double* out,
                 cudaStream_t stream);

struct CombineArgs {
  const double* source[kMaxTerms] = {};
  const double* matrix[kMaxTerms] = {};  ///< k x k column-major
  double factor[kMaxTerms] = {};
  int count = 0;
};
/// dst = (accumulate ? dst : 0) + sum_t factor_t source_t matrix_t (no source may be dst).
void combine(double* dst, const CombineArgs& args, bool accumulate, std::int32_t n, int k, cudaStream_t stream);

/// A CSR matrix in device memory (32-bit indices, fp64 values).
struct CsrArrays {
  const std::int32_t* row_ptr = nullptr;
  const std::int32_t* col_idx = nullptr;
  const double* values = nullptr;
  std::int32_t rows = 0;
};
/// c = alpha A b + beta d for row-major n x k fp64 blocks (beta = 0: d is not read; d may be c, b may not); each
/// row's products summed in stored order. With `norms` (k doubles, may be in the small buffer) also norms[j] = the
/// sum over rows of c[i, j]^2, from the same pass (partial sums in `workspace`, reduction_workspace(k) doubles).
void csr_product(const CsrArrays& a, const double* b, const double* d, double* c, int k, double alpha, double beta,
                 double* norms, double* workspace, cudaStream_t stream);

/// One small step on the small buffer, run by one thread block of small::kTeamThreads threads (the factorising steps
/// on a copy of the buffer in shared memory where it fits).
void small_step(double* base, const small::SmallLayout& layout, const small::SmallStep& step, cudaStream_t stream);

/// Sets count doubles at dst to value.
void fill(double* dst, std::int64_t count, double value, cudaStream_t stream);

/// Chebyshev input: f[i, c] = float(s_i r[i, c] scale_c) (0 for k <= c < kp), width kp.
void chebyshev_start(const double* r, const double* row_scale, const double* scale, float* f, std::int32_t n, int k,
                     int kp, cudaStream_t stream);
/// The recurrence's terms after a cuSPARSE product (bcsr24 adds them in its epilogue):
/// previous = float(previous + c_current current + c_f f); current null: no middle term.
void chebyshev_update(float* previous, const float* current, const float* f, double c_current, double c_f,
                      std::int64_t count, cudaStream_t stream);
/// Chebyshev output: z[i, c] = current[i, c] factor s_i / scale_c (0 where scale_c = 0).
void chebyshev_finish(const float* current, double factor, const double* row_scale, const double* scale, double* z,
                      std::int32_t n, int k, int kp, cudaStream_t stream);

/// z[i, c] = r[i, c] d_i (active_c != 0), else 0; inverse_diagonal null: d_i = 1 (no preconditioner).
void jacobi(const double* r, const double* inverse_diagonal, const double* active, double* z, std::int32_t n, int k,
            cudaStream_t stream);

/// dst[i, c] = double(src[i * ld + c]): a caller's fp32 block (row stride ld) into an n x k fp64 block.
void widen(const float* src, int ld, double* dst, std::int32_t n, int k, cudaStream_t stream);
/// dst[i * ld + c] = float(src[i, c]): an n x k fp64 block into a caller's fp32 block (row stride ld).
void narrow(const double* src, float* dst, int ld, std::int32_t n, int k, cudaStream_t stream);

/// Lanczos start vectors small::lanczos_start(i, c, seed) for c < k, 0 for k <= c < kp.
/// caller_rows: the row number each row draws its values from (null: its own index), so that a rank's rows of a
/// distributed block get the values the whole block has on one GPU.
void lanczos_fill(float* v, const std::int32_t* caller_rows, std::int32_t n, int k, int kp, std::uint64_t seed,
                  cudaStream_t stream);
/// v[i, c] = float(v[i, c] inverse_beta_c) for c < k, 0 beyond.
void lanczos_scale(float* v, const double* inverse_beta, std::int32_t n, int k, int kp, cudaStream_t stream);
/// w = w - alpha_c v - beta_c previous (beta null: no third term) for c < k (columns beyond k of w must be zero, as
/// a product of zero columns leaves them), and w_norm2[c] = the sum over rows of the stored w squared.
void lanczos_orthogonalize(float* w, const float* v, const float* previous, const double* alpha, const double* beta,
                           double* w_norm2, std::int32_t n, int k, int kp, double* workspace, cudaStream_t stream);

/// PCG: p = d r (first) with rho = sum r d r, or p = d r + beta p.
void pcg_direction(double* p, const double* r, const double* inverse_diagonal, const double* beta, bool first,
                   double* rho, std::int32_t n, int k, double* workspace, cudaStream_t stream);
/// PCG: x += alpha p, r -= alpha q, rho_next = sum r d r, r_norm2 = sum r r.
void pcg_update(double* x, const double* p, double* r, const double* q, const double* alpha,
                const double* inverse_diagonal, double* rho_next, double* r_norm2, std::int32_t n, int k,
                double* workspace, cudaStream_t stream);

}  // namespace bcsr24::solver::block_gpu
