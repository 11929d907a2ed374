// The block eigensolver: LOBPCG (Knyazev) for the k smallest or largest eigenpairs of a symmetric A, written against
// BlockSpace like the block CG. The tall work (products A W in fp64, the Gram matrices of [X W P] in fp64, the
// preconditioner, the block updates) stays on the device; the host reads the Gram matrices and the residual norms
// once per iteration (one synchronisation) and solves the 3k x 3k Rayleigh-Ritz problem with Eigen.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "block_fcg.hpp"  // BlockStop
#include "block_space.hpp"

namespace bcsr24::solver {

/// The space's memory (BlockSlots::count(memory) = 12 slots) the eigensolver needs, with the 17 k x k matrices of
/// the small buffer it uses. At most 11 slots are live: X, AX, W, AW, P, AP, for the generalized problem M X, M W,
/// M P too, and the residual or two blocks being updated.
inline constexpr int kLobpcgMemory = 4;

struct LobpcgOptions {
  double tolerance = 1e-5;        ///< a pair is converged once |A x - lambda x| <= tolerance * norm_estimate
  double norm_estimate = 1.0;     ///< ||A|| (e.g. the Gershgorin bound)
  int max_iterations = 500;
  bool largest = false;           ///< the largest eigenvalues instead of the smallest
  /// The preconditioner: the polynomial (an approximate inverse of A, for the smallest eigenvalues), else Jacobi
  /// (jacobi) or none.
  const ChebyshevPolynomial* chebyshev = nullptr;
  bool jacobi = false;
  double time_limit_seconds = 0.0;
  /// A x = lambda M x with the space's mass matrix (BlockSpace::set_mass; symmetric positive definite): X is made
  /// M-orthonormal, R = A X - M X Theta and the Gram matrices of the Rayleigh-Ritz step are M's.
  bool generalized = false;
};

struct LobpcgResult {
  BlockStop stop = BlockStop::max_iterations;
  std::string message;
  int iterations = 0;
  std::vector<double> eigenvalues;     ///< ascending for the smallest, descending for the largest
  std::vector<double> residual_norm;   ///< |A x_j - lambda_j x_j| of the returned pairs
  std::vector<double> history;         ///< largest |r_j| / norm_estimate per iteration
  int converged = 0;                   ///< pairs within the tolerance
  std::int64_t synchronizations = 0, inner_products = 0, outer_products = 0;
};

/// The k eigenpairs, starting from the block in slot `start` (n x k, full rank); on return slot `result` holds the
/// orthonormal (generalized: M-orthonormal) eigenvector block (the slot numbers are the space's). Needs a space
/// with memory >= kLobpcgMemory.
/// @throw InvalidArgument for a space too small, a start block that is rank deficient, or (generalized) an M that
///        proves not positive definite on the search space.
LobpcgResult block_lobpcg(BlockSpace& space, int start, int& result, const LobpcgOptions& options);

}  // namespace bcsr24::solver
