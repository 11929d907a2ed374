// bcsr24_solve's runs of the block solver and of its baseline: building the space (GPU or CPU), the Lanczos
// estimate and the Chebyshev choice, the timed solve and the host's fp64 check. Their reports: block_reports.hpp.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bcsr24/precision.hpp"
#include "bcsr24/solvers.hpp"
#include "bcsr24/sparse_operator.hpp"
#include "block_fcg.hpp"
#include "chebyshev.hpp"
#include "cpu_block_space.hpp"
#include "gpu_block_space.hpp"
#include "gpu_block_space.hpp"
#include "jacobi_pcg.hpp"
#include "problem.hpp"

namespace bcsr24::solver {

struct BlockRunSettings {
  std::string device = "gpu";           ///< gpu or cpu
  InnerBackend backend = InnerBackend::bcsr24;
  Precision precision = Precision::split;
  bool jacobi_scaling = true;           ///< the inner matrix is D^-1/2 A D^-1/2
  OuterProduct outer_product = OuterProduct::csr_kernel;  ///< GPU: who computes the fp64 products
  bool chebyshev = true;                ///< false: the Jacobi preconditioner (fp64) from the start
  BlockFcgOptions fcg;
  ChebyshevOptions polynomial;
  BRounding cpu_rounding = BRounding::tiles;
  bool timing = true;                   ///< CUDA events around every operation
  bool warm_up = true;                  ///< an untimed short run first (module loading, library handles)
  bool verbose = false;
};

struct BlockRunReport {
  std::string label;                    ///< e.g. "block, bcsr24 split"
  BlockRunSettings settings;
  BlockFcgResult result;
  std::optional<ChebyshevChoice> chebyshev;
  double preprocess_seconds = 0.0;      ///< host: scaling and (bcsr24) conversion of the inner matrix
  double upload_seconds = 0.0;          ///< space construction (device allocations and uploads)
  double lanczos_seconds = 0.0;         ///< spectrum estimate (part of the solve)
  double iterate_seconds = 0.0;         ///< the iterations
  double solve_seconds = 0.0;           ///< time to solution: Lanczos + iterations
  std::int64_t lanczos_products = 0;
  std::optional<BlockTimings> timings;  ///< GPU only: device time per kind over the solve
  std::string plan;                     ///< bcsr24 plan summary (GPU)
  std::int64_t device_bytes = 0;
  HostCheck host;
  nlohmann::json census;                ///< bcsr24 census and scaling of the inner matrix
};

struct PcgRunReport {
  std::string label = "Jacobi-PCG fp64, cuSPARSE";
  std::string device = "gpu";
  PcgOptions options;
  PcgResult result;
  double upload_seconds = 0.0, solve_seconds = 0.0;
  std::optional<BlockTimings> timings;
  std::int64_t device_bytes = 0;
  HostCheck host;
};

/// @throw what the spaces and the conversion throw.
BlockRunReport run_block_solver(const Problem& problem, const BlockRunSettings& settings);

/// The pieces of a block run that the one-GPU and the distributed runs share: the solver's knobs (the observer
/// prints only where print_iterations), the solve's options, the report from the solver's record (and the host's
/// fp64 check of x, when x is not empty), the run's label.
void configure_solver(solvers::SpdSolver& solver, const BlockRunSettings& settings, bool print_iterations);
solvers::SolveOptions solve_options(const BlockRunSettings& settings);
void fill_block_report(BlockRunReport& report, const solvers::SpdSolver& solver, const solvers::SolveReport& solved,
                       const Problem& problem, const std::vector<double>& x);
std::string block_label(const BlockRunSettings& settings);
PcgRunReport run_pcg_baseline(const Problem& problem, const std::string& device, const PcgOptions& options,
                              bool timing, bool warm_up, bool verbose = false);

}  // namespace bcsr24::solver
