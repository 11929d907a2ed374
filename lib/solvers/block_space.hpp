// The operations the GPU-resident solvers (block_fcg, jacobi_pcg, lanczos_bounds) are written against. Every
// operation only enqueues work; numbers stay in the space's small buffer (small_algebra.hpp) and reach the host
// only through read_small(), the one synchronisation an outer iteration makes. The GPU space (gpu_block_space)
// runs each operation as kernels on one stream; the CPU space (cpu_block_space) runs the same arithmetic on the
// host, with bcsr24's products emulated from the stored matrix, so the algorithms are tested without a GPU.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bcsr24/csr_matrix.hpp"
#include "bcsr24/error.hpp"
#include "small_algebra.hpp"

namespace bcsr24::solver {

/// Slots of n x k fp64 blocks used by the solvers: x, r, b, z, then `memory` pairs (p_t, q_t).
struct BlockSlots {
  static constexpr int x = 0, r = 1, b = 2, z = 3, first_direction = 4;
  static int p(int t) { return first_direction + 2 * t; }
  static int q(int t) { return first_direction + 2 * t + 1; }
  static int count(int memory) { return first_direction + 2 * memory; }
};

/// One term of a block combination: factor * slot * (k x k matrix of the small buffer at `matrix`).
struct CombineTerm {
  int slot = 0;
  std::int64_t matrix = 0;  ///< offset of a column-major k x k matrix in the small buffer
  double factor = 1.0;
};

/// The polynomial preconditioner applied by precondition_chebyshev: z = s(A_inner) r with the residual
/// polynomial 1 - t s(t) = T_m((theta - t) / delta) / T_m(theta / delta) (Chebyshev, degree m odd) on [a, b].
/// The three-term recurrence z_{j+1} = omega_j (z_j + (r - A z_j) / theta) + (1 - omega_j) z_{j-1} needs m - 1
/// products; omega[j - 1] is the factor of product j (j = 1 .. m - 1).
struct ChebyshevPolynomial {
  int degree = 1;
  double a = 0.0, b = 0.0;     ///< interval [a, b]
  double theta = 0.0;          ///< (b + a) / 2
  std::vector<double> omega;   ///< degree - 1 factors
};

/// One Gram matrix of a gram() call: left^T slot into the small buffer at `offset` (k x k, column-major).
struct GramTarget {
  int slot = 0;
  std::int64_t offset = 0;
};

/// Events a space counts (what a report needs besides the small buffer).
struct SpaceCounters {
  std::int64_t synchronizations = 0;  ///< host waits for the device (read_small, slot reads)
  std::int64_t inner_products = 0;    ///< products with the inner operator (Chebyshev, Lanczos)
  std::int64_t outer_products = 0;    ///< fp64 products with A (directions, residuals)
};

class BlockSpace {
 public:
  virtual ~BlockSpace() = default;
  /// Columns (right-hand sides).
  virtual int k() const = 0;
  virtual std::int32_t rows() const = 0;
  virtual const small::SmallLayout& layout() const = 0;

  /// Row-major n x k contents of a slot (synchronise).
  virtual void set_slot(int slot, const std::vector<double>& values) = 0;
  virtual std::vector<double> slot(int slot) = 0;
  virtual void zero_slot(int slot) = 0;

  /// q = A p in fp64.
  virtual void multiply(int q, int p) = 0;
  /// The mass matrix M of a generalized eigenproblem A x = lambda M x (n x n, fp64; null: none), copied into the
  /// space (uploaded once: every multiply_mass after it uses the copy) until the next call.
  virtual void set_mass(const CsrMatrix* m) = 0;
  /// q = M p in fp64 (counted as an outer product). @throw InvalidArgument without a mass matrix.
  virtual void multiply_mass(int q, int p) = 0;
  /// r = b - A x in fp64, and r's squared column norms into the small buffer's r_norm2.
  virtual void residual(int r, int b, int x) = 0;
  /// Squared column norms of a slot into the small buffer at `offset` (k doubles).
  virtual void column_norms(int slot, std::int64_t offset) = 0;
  /// Column dot products x_j . y_j into the small buffer at `offset` (k doubles).
  virtual void column_dots(int x, int y, std::int64_t offset) = 0;
  /// left^T right_i (k x k, column-major, accumulated in fp64) into the small buffer at each target's offset; the
  /// left block is read once for two targets.
  virtual void gram(int left, const std::vector<GramTarget>& rights) = 0;
  /// dst = (accumulate ? dst : 0) + sum_t factor_t * slot_t * M_t. No term may read dst.
  virtual void combine(int dst, bool accumulate, const std::vector<CombineTerm>& terms) = 0;
  /// Runs one small-algebra step on the small buffer.
  virtual void small_step(const small::SmallStep& step) = 0;
  /// Copies `count` doubles of the small buffer from `offset` to the host: waits for every enqueued operation.
  virtual void read_small(std::int64_t offset, std::int64_t count, double* out) = 0;
  /// Sets `count` doubles of the small buffer (enqueued; `values` may be freed on return).
  virtual void write_small(std::int64_t offset, const std::vector<double>& values) = 0;

  /// z = S s(A_inner) (S r scale_j) / scale_j column by column, with S the inner row scale (Jacobi: D^-1/2;
  /// ones without it), scale_j the small buffer's `scale` (0: z_j = 0), and the polynomial applied in fp32 with
  /// the inner operator (bcsr24 or cuSPARSE fp32) on the matrix S A S.
  virtual void precondition_chebyshev(int z, int r, const ChebyshevPolynomial& polynomial) = 0;
  /// z_j = D^-1 r_j (fp64) for active columns, else 0.
  virtual void precondition_jacobi(int z, int r) = 0;
  /// z_j = r_j for active columns, else 0 (no preconditioner).
  virtual void precondition_identity(int z, int r) = 0;
  /// `steps` Lanczos steps with the inner operator on k columns at once (fp32 vectors), from the start vectors
  /// small::lanczos_start(row, column, seed): alphas and betas into the small buffer.
  virtual void lanczos(int steps, std::uint64_t seed) = 0;

  /// PCG: p = D^-1 r + beta p (beta from the small buffer; first: p = D^-1 r) and rho = r . D^-1 r when first.
  virtual void pcg_direction(int p, int r, bool first) = 0;
  /// PCG: x += alpha p, r -= alpha q (alpha from the small buffer), rho_next = r . D^-1 r and r_norm2 = |r|^2.
  virtual void pcg_update(int x, int p, int r, int q) = 0;

  virtual SpaceCounters counters() const = 0;
};

/// The sizes both spaces take, within the small algebra's fixed capacities (small_algebra.hpp).
/// @throw InvalidArgument naming the first one outside
inline void check_space_sizes(int k, int memory, int lanczos_steps) {
  if (k < 1 || k > small::kMaxColumns)
    throw InvalidArgument("block solver: k = " + std::to_string(k) + " outside 1 .. " +
                          std::to_string(small::kMaxColumns));
  if (memory < 1 || memory > small::kMaxMemory)
    throw InvalidArgument("block solver: memory " + std::to_string(memory) + " outside 1 .. " +
                          std::to_string(small::kMaxMemory));
  if (lanczos_steps < 0 || lanczos_steps > small::kMaxLanczos)
    throw InvalidArgument("block solver: at most " + std::to_string(small::kMaxLanczos) + " Lanczos steps");
}

/// The operations above as the GPU and the CPU space declare them (in the public part of each): one list, so the
/// two implementations cannot drift apart from the interface or from each other.
#define BCSR24_BLOCK_SPACE_OPERATIONS                                                         \
  void set_slot(int slot, const std::vector<double>& values) override;                        \
  std::vector<double> slot(int slot) override;                                                \
  void zero_slot(int slot) override;                                                          \
  void multiply(int q, int p) override;                                                       \
  void set_mass(const CsrMatrix* m) override;                                                 \
  void multiply_mass(int q, int p) override;                                                  \
  void residual(int r, int b, int x) override;                                                \
  void column_norms(int slot, std::int64_t offset) override;                                  \
  void column_dots(int x, int y, std::int64_t offset) override;                               \
  void gram(int left, const std::vector<GramTarget>& rights) override;                        \
  void combine(int dst, bool accumulate, const std::vector<CombineTerm>& terms) override;     \
  void small_step(const small::SmallStep& step) override;                                     \
  void read_small(std::int64_t offset, std::int64_t count, double* out) override;             \
  void write_small(std::int64_t offset, const std::vector<double>& values) override;          \
  void precondition_chebyshev(int z, int r, const ChebyshevPolynomial& polynomial) override;  \
  void precondition_jacobi(int z, int r) override;                                            \
  void precondition_identity(int z, int r) override;                                          \
  void lanczos(int steps, std::uint64_t seed) override;                                       \
  void pcg_direction(int p, int r, bool first) override;                                      \
  void pcg_update(int x, int p, int r, int q) override;

}  // namespace bcsr24::solver
