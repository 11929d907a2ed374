// The solvers library's own way into an SpdSolver: the knobs bcsr24_solve and the tests set beyond SolveOptions
// (the inner backend of the cuSPARSE comparison, the CPU space's rounding, the block iteration's tuning) and the
// whole record of the last solve, of which SolveReport is the stable part. Not installed.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "bcsr24/solvers.hpp"
#include "block_fcg.hpp"
#include "chebyshev.hpp"
#include "cpu_block_space.hpp"
#include "gpu_block_space.hpp"
#include "inner_matrix.hpp"

namespace bcsr24::solvers::detail {

/// What an SpdSolver does beyond SolveOptions. The defaults are the library's choices.
struct EngineSettings {
  solver::InnerBackend backend = solver::InnerBackend::bcsr24;  ///< cusparse_csr_f32: the comparison
  solver::OuterProduct outer_product = solver::OuterProduct::csr_kernel;
  solver::BRounding cpu_rounding = solver::BRounding::tiles;    ///< solve_host: B as the tile kernels see it
  bool jacobi_scaling = true;  ///< the polynomial is of D^-1/2 A D^-1/2 (false: of A itself)
  bool timing = true;        ///< CUDA events around every operation (the report's product share)
  bool warm_up = true;       ///< a short untimed run on a new space (module loading, library handles)
  bool reuse_spectrum = true;  ///< later solves reuse the first one's Lanczos estimate
  /// The block iteration's parameters (tolerances, initial guess and iteration limit come from SolveOptions).
  solver::BlockFcgOptions fcg;
  /// The polynomial's parameters (the degree comes from SolveOptions).
  solver::ChebyshevOptions polynomial;
  solver::BlockObserver observer;  ///< sees each iteration's record
  /// Makes the cuSPARSE products of the comparison backend (cusparse_support.hpp's cusparse_products()).
  solver::ForeignProducts foreign;
};

/// Everything the last solve recorded.
struct LastSolve {
  solver::BlockFcgResult result;
  std::optional<solver::ChebyshevChoice> chebyshev;
  std::optional<solver::BlockTimings> timings;  ///< GPU with timing
  std::string plan;                  ///< the bcsr24 plan of the preconditioner's products
  std::int64_t device_bytes = 0;     ///< the space's device memory
  double preprocess_seconds = 0.0;   ///< scaling and conversion of the inner matrix (when this solve made it)
  double upload_seconds = 0.0;       ///< the space's construction (when this solve made it)
  double lanczos_seconds = 0.0, iterate_seconds = 0.0;
  std::int64_t lanczos_products = 0;
  const solver::InnerMatrix* inner = nullptr;  ///< the inner matrix used (null without the polynomial)
};

struct SolverAccess {
  static EngineSettings& settings(SpdSolver& solver);
  static const LastSolve& last(const SpdSolver& solver);
};

}  // namespace bcsr24::solvers::detail
