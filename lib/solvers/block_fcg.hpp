// The block solver: breakdown-free flexible block CG in fp64 for all k right-hand sides at once, preconditioned by
// a Chebyshev polynomial of the Jacobi-scaled matrix applied in fp32 through the inner operator (bcsr24 or
// cuSPARSE fp32), written against BlockSpace so that every number stays on the device and the host waits once
// per iteration.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "block_space.hpp"

namespace bcsr24::solver {

enum class BlockStop { converged, max_iterations, stagnation, breakdown, time_limit };
const char* block_stop_name(BlockStop stop) noexcept;

struct BlockFcgOptions {
  double tolerance = 1e-8;      ///< on max_j |b_j - A x_j| / |b_j|, decided with the true fp64 residual
  double absolute_tolerance = 0.0;  ///< a column is also done once |b_j - A x_j| <= this
  bool initial_guess = false;   ///< the space's slot x holds the start (else it is zeroed)
  /// The preconditioner without the polynomial (a null `chebyshev`, and after the fallback): D^-1, or the identity.
  bool identity_base = false;
  int max_iterations = 1000;
  /// Direction blocks each new one is A-orthogonalised against (the flexible part: the preconditioner is not
  /// exactly linear in reduced precision). Must not exceed the space's memory.
  int memory = 2;
  double drop_tolerance = 1e-10;  ///< pivot threshold of the whitening (normalised Gram): smaller = dependent
  /// The residual is recomputed as b - A x every this many iterations (1: every iteration, so that every status the
  /// host reads is the true residual and convergence costs no extra synchronisation); in between it is updated
  /// by the recursion r -= Q alpha, and a convergence it claims is confirmed with the true one.
  int replace_every = 1;
  /// Stagnation: the best max relative residual fell by less than 1 / stall_factor over stall_window iterations.
  int stall_window = 25;
  double stall_factor = 0.8;
  /// On stagnation with the Chebyshev preconditioner: first restart this many times (forget the stored direction
  /// blocks, so the next block is only whitened: conjugacy lost to the preconditioner's rounding is not carried on),
  /// then continue with Jacobi (fp64) or stop.
  int stall_restarts = 1;
  /// Once the restarts are spent, the window that decides the fallback to Jacobi: the residual of block CG can
  /// plateau for tens of iterations on high-contrast problems and then fall again (a 2-D log-normal problem of 1.69M
  /// rows fell back after 25 flat iterations and then stagnated in the Jacobi phase). Without the fallback the
  /// window that decides the stop is jacobi_stall_window, the long one.
  int fallback_window = 100;
  /// On stagnation with the Chebyshev preconditioner: continue with Jacobi (fp64) instead of stopping.
  bool fallback_jacobi = true;
  /// The window in the Jacobi phase: CG with Jacobi has long plateaus on ill-conditioned matrices.
  int jacobi_stall_window = 400;
  double time_limit_seconds = 0.0;  ///< wall-clock cap of the iteration (0: none); stop reason time_limit
};

/// One iteration, from the status the host read after it.
struct BlockIterationRecord {
  int iteration = 0;
  double max_relative = 0.0;    ///< max_j |r_j| / |b_j|
  int active = 0;               ///< columns above the tolerance
  int directions = 0;           ///< new search directions kept
  int deflated = 0;             ///< candidates dropped as dependent
  bool chebyshev = true;        ///< preconditioned by the polynomial (else Jacobi)
  bool true_residual = true;    ///< the residual was recomputed as b - A x
  double seconds = 0.0;         ///< since the start of the iteration loop
  std::vector<double> relative; ///< per column
};

struct BlockFcgResult {
  BlockStop stop = BlockStop::max_iterations;
  std::string message;
  int iterations = 0;
  int jacobi_iterations = 0;       ///< iterations preconditioned by Jacobi (after a fallback)
  std::vector<int> restart_iterations;  ///< iterations after which a stagnation restarted the iteration
  int fallback_iteration = -1;
  std::string fallback_reason;
  std::int64_t deflated = 0;       ///< candidate directions dropped over the whole solve
  std::vector<double> initial_relative, final_relative;
  double max_final_relative = 0.0;
  std::int64_t synchronizations = 0;  ///< host waits during the iteration (setup excluded)
  std::int64_t inner_products = 0, outer_products = 0;
  std::vector<BlockIterationRecord> history;
};

using BlockObserver = std::function<void(const BlockIterationRecord&)>;

/// Solves A X = B for the space's slot b from X = 0 (or from the slot x with initial_guess). `chebyshev` null: block
/// CG preconditioned by Jacobi (or by nothing with identity_base).
/// @throw InvalidArgument when the options do not fit the space (memory).
BlockFcgResult block_fcg(BlockSpace& space, const ChebyshevPolynomial* chebyshev, const BlockFcgOptions& options,
                         const BlockObserver& observer = {});

}  // namespace bcsr24::solver
