// The inner solve: breakdown-free block conjugate gradient (BF-BCG) on an fp32 block of k right-hand sides,
// written against an abstract block space so that the same algebra runs on the GPU and in CPU tests.
#pragma once

#include <string>

#include <Eigen/Dense>

namespace bcsr24::solver {

/// The workspace of the inner solve: two n x 4k fp32 blocks laid out as [X P R Q] (solution, search
/// directions, residuals, A times the directions). One is "current"; update() writes the other and swaps.
/// Before block_cg(), X, P and Q of the current block must be zero and R hold the right-hand sides.
class InnerBlockSpace {
 public:
  virtual ~InnerBlockSpace() = default;
  /// Columns k of each of X, P, R, Q.
  virtual int k() const = 0;
  /// gram = [P R Q]^T [P R Q] (3k x 3k) of the current block, brought to the host (synchronises).
  virtual void gram(Eigen::MatrixXd& gram) = 0;
  /// next[X P R] = current[X P R Q] * m with m of size 4k x 3k; next becomes current. Q of the new current
  /// block is stale until product().
  virtual void update(const Eigen::MatrixXd& m) = 0;
  /// current Q = A * current P with the operator under test (bcsr24 with fp16 A, or cuSPARSE fp32).
  virtual void product() = 0;
};

struct InnerOptions {
  int max_products = 30;           ///< products A * P per inner solve (the inner iteration count)
  double tolerance = 1e-2;         ///< stop when every column's residual fell by this factor
  /// Search directions whose whitened Gram eigenvalue (of the column-normalised W^T W) is below this are
  /// dropped: they are (numerically) dependent on the others. This is what keeps block CG from breaking down
  /// when right-hand sides converge at different speeds or are linearly dependent.
  double drop_tolerance = 1e-5;
  /// Columns whose residual fell below this factor are at the fp32 noise floor and get no new direction.
  double noise_floor = 1e-6;
};

struct InnerStats {
  int products = 0;                ///< A * P products done
  double relative_residual = 1.0;  ///< max over columns of |r_j| / |r_j(0)| (estimated from the Gram matrices)
  int max_deflated = 0;            ///< most directions dropped in one iteration
  bool breakdown = false;          ///< stopped early on a numerical failure (reason below); X is still usable
  std::string breakdown_reason;
};

/// Runs BF-BCG (Ji & Li 2017): P is kept orthonormal-like by whitening W = R + P beta with the eigen-
/// decomposition of its column-normalised Gram matrix, dropping dependent directions, so the small s x s
/// system P^T A P stays well conditioned and no rank deficiency can break the iteration. Entries of P are
/// then bounded by 1 in magnitude, which lets the caller convert P to fp16 with a fixed scale.
/// All Gram matrices needed per iteration come from one 3k x 3k product [P R Q]^T [P R Q]; the new X, P and
/// R come from one block update. Returns with the solution in X of the current block.
InnerStats block_cg(InnerBlockSpace& space, const InnerOptions& options);

}  // namespace bcsr24::solver
