// The standard practice the block solver is measured against: k independent Jacobi-preconditioned CG solves in
// fp64, advanced together so that each iteration is one sparse x dense product for all k columns (each column with
// its own scalars), until every column reaches the tolerance in the true residual. Scalars and convergence tests
// stay on the device; the host reads the status every `check_every` iterations.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "block_fcg.hpp"
#include "block_space.hpp"

namespace bcsr24::solver {

struct PcgOptions {
  double tolerance = 1e-8;       ///< on max_j |b_j - A x_j| / |b_j|, confirmed with the true fp64 residual
  int max_iterations = 100000;
  /// Iterations between status reads: columns that converge in between stop moving on the device (zero step), so
  /// at most check_every - 1 iterations run after the last column converged.
  int check_every = 8;
  double time_limit_seconds = 0.0;  ///< wall-clock cap (0: none); stop reason time_limit
};

struct PcgCheck {
  int iteration = 0;
  double max_relative = 0.0;
  int active = 0;
  bool true_residual = false;
  double seconds = 0.0;
};

struct PcgResult {
  BlockStop stop = BlockStop::max_iterations;
  std::string message;
  int iterations = 0;             ///< iterations run (including up to check_every - 1 after convergence)
  int converged_iteration = -1;   ///< first status read that found every column converged
  int restarts = 0;               ///< true residual above the tolerance where the recursion claimed convergence
  std::vector<double> final_relative;
  double max_final_relative = 0.0;
  std::int64_t synchronizations = 0;
  std::int64_t products = 0;
  std::vector<PcgCheck> history;  ///< one entry per status read
};

using PcgObserver = std::function<void(const PcgCheck&)>;

/// Solves A X = B for the space's slot b from X = 0 (slots x, r, b, p(0), q(0)); `observer` sees every status read.
PcgResult jacobi_pcg(BlockSpace& space, const PcgOptions& options, const PcgObserver& observer = {});

}  // namespace bcsr24::solver
