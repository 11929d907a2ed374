// bcsr24_solve's command line: the options, their checks and what each solver takes from them (their echo in the
// JSON report: solve_json.hpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bcsr24/solvers.hpp"
#include "block_fcg.hpp"
#include "block_runs.hpp"
#include "chebyshev.hpp"
#include "cli.hpp"
#include "bcsr24_testkit/diffusion.hpp"
#include "jacobi_pcg.hpp"
#include "mesh_matrix.hpp"

namespace bcsr24::solver {

inline constexpr const char* kProgram = "bcsr24_solve";
/// Exit status beyond the programs' common ones (apps/common/cli.hpp): a run stopped without converging.
inline constexpr int kExitNotConverged = 3;

struct Options {
  std::string matrix_path;
  std::vector<std::int32_t> mesh;       ///< NX NY NZ when --generate-mesh is given
  MeshSpec mesh_spec;                   ///< the other mesh options (its sizes come from `mesh`)
  std::vector<std::int32_t> diffusion;  ///< NX NY NZ when --generate-diffusion is given
  DiffusionSpec diffusion_spec;         ///< the other diffusion options (sizes, field and anisotropy come from
                                        ///< `diffusion`, `coefficients` and `anisotropy`)
  std::string coefficients = "inclusions";
  std::vector<double> anisotropy{1.0, 1.0, 1.0};
  std::string write_matrix;
  bool write_only = false;
  int rhs = 16;
  std::string rhs_kind = "a_times_random";
  std::uint64_t seed = 1;
  double tolerance = 1e-8;
  /// Largest |a_ij - a_ji| / max(|a_ij|, |a_ji|, sqrt(|a_ii a_jj|)) accepted (bcsr24::solvers::SpdOptions).
  double symmetry_tolerance = bcsr24::solvers::SpdOptions{}.symmetry_tolerance;
  std::string solver = "block";
  // Block solver: the options bound to fcg are its iteration limit, memory and drop tolerance (their defaults are
  // the solver's own); polynomial is the Chebyshev preconditioner's.
  BlockFcgOptions fcg;
  ChebyshevOptions polynomial;
  std::string preconditioner = "chebyshev";
  std::string cpu_b_rounding = "tiles";
  int check_every = 8;
  double time_limit = 0.0;
  bool no_timing = false;
  bool check_spaces = false;
  std::string inner_backend = "bcsr24";
  std::string outer_product = "csr_kernel";
  bool compare = false;
  std::string inner_scaling = "jacobi";
  std::string inner_precision = "split";
  std::string fallback = "jacobi";
  int stall_window = 25;
  double stall_factor = 0.8;
  int replace_every = 1;
  std::string device = "gpu";
  int gpus = 0;  ///< 0: one GPU; P >= 1: SpdSolver with a communicator on GPUs 0 .. P-1 (one thread each)
  bool mpi = false;  ///< SpdSolver with a communicator, one MPI process per GPU (mpirun -np P)
  std::string partition = "automatic";  ///< --partition: how the distributed runs assign rows to ranks
  std::string json_path;
  bool verbose = false;

  /// Several GPUs: --gpus P or --mpi.
  bool distributed() const { return gpus > 0 || mpi; }
};

/// Adds every option to `app`, bound to `o`.
void add_options(CLI::App& app, Options& o);
/// The checks CLI11 cannot make (combinations, build options).
/// @throw apps::UsageError
void validate(const Options& o);

/// What the block solver takes from the options, with the inner products of `backend`.
BlockRunSettings block_settings(const Options& o, InnerBackend backend);
/// What the Jacobi-PCG baseline takes from the options.
PcgOptions pcg_options(const Options& o);

}  // namespace bcsr24::solver
