// bcsr24_solve's command line (solve_options.hpp).
#include "solve_options.hpp"

#include <algorithm>

#include "bcsr24/distributed_partition.hpp"
#include "bcsr24/error.hpp"
#include "cli.hpp"
#include "small_algebra.hpp"
#if BCSR24_HAS_NCCL
#include "rank_session.hpp"
#include "cli_options.hpp"
#endif

namespace bcsr24::solver {

using json = nlohmann::json;
using apps::UsageError;

namespace {

/// The matrix: read, or generated (mesh or diffusion problem) with its parameters; writing it out.
void add_problem_options(CLI::App& app, Options& o) {
  auto* matrix = app.add_option("--matrix", o.matrix_path, "Matrix Market file of an SPD matrix");
  auto* mesh = app.add_option("--generate-mesh", o.mesh,
                              "Generate a 3D mesh matrix with NX x NY x NZ nodes instead (diagonally dominant SPD)")
                   ->expected(3);
  auto* diffusion =
      app.add_option("--generate-diffusion", o.diffusion,
                     "Generate a 3-D diffusion problem on NX x NY x NZ cells instead (finite volumes, 7 points, "
                     "Dirichlet boundary; NZ = 1: 2-D): see --coefficients")
          ->expected(3);
  matrix->excludes(mesh)->excludes(diffusion);
  mesh->excludes(diffusion);
  apps::add_checked(app, "--dofs-per-node", o.mesh_spec.dofs_per_node, "Unknowns per mesh node", CLI::PositiveNumber);
  apps::add_checked(app, "--stencil", o.mesh_spec.stencil, "Mesh stencil: 7 or 27 points", CLI::IsMember({7, 27}));
  apps::add_checked(app, "--diag-margin", o.mesh_spec.diagonal_margin,
                    "Mesh diagonal = (1 + margin) * off-diagonal row sum; smaller = worse conditioned",
                    CLI::PositiveNumber);
  app.add_option("--mesh-seed", o.mesh_spec.seed, "Seed of the mesh values")->capture_default_str();
  apps::add_checked(
      app, "--coefficients", o.coefficients,
      "Diffusion coefficient field: constant, inclusions (random cubes of --contrast in 1), layers "
      "(z-layers log-uniform in [1, --contrast]), lognormal (exp(--sigma g), g a smoothed Gaussian field)",
      CLI::IsMember({"constant", "inclusions", "layers", "lognormal"}));
  apps::add_checked(app, "--contrast", o.diffusion_spec.contrast,
                    "Diffusion: coefficient of the inclusions, or range of the layers", CLI::PositiveNumber);
  apps::add_checked(app, "--fill", o.diffusion_spec.fill, "Diffusion: volume fraction of the inclusions",
                    CLI::Range(0.0, 1.0));
  apps::add_checked(app, "--inclusion-size", o.diffusion_spec.inclusion_size, "Diffusion: inclusion edge in cells",
                    CLI::PositiveNumber);
  apps::add_checked(app, "--layer-thickness", o.diffusion_spec.layer_thickness, "Diffusion: layer thickness in cells",
                    CLI::PositiveNumber);
  apps::add_checked(app, "--sigma", o.diffusion_spec.sigma, "Diffusion: standard deviation of ln k (lognormal)",
                    CLI::NonNegativeNumber);
  apps::add_checked(app, "--correlation", o.diffusion_spec.correlation,
                    "Diffusion: smoothing half width in cells (lognormal)", CLI::NonNegativeNumber);
  app.add_option("--anisotropy", o.anisotropy, "Diffusion: K = k diag(AX, AY, AZ), e.g. 1 1 1e-4")->expected(3);
  app.add_option("--diffusion-seed", o.diffusion_spec.seed, "Seed of the coefficient field")->capture_default_str();
  app.add_option("--write-matrix", o.write_matrix,
                 "Also write the matrix (read or generated) to this Matrix Market file");
  app.add_flag("--write-only", o.write_only, "With --write-matrix: write it and stop");
}

/// The right-hand sides, the solver and its knobs, the launch and the reports.
void add_solve_options(CLI::App& app, Options& o) {
  apps::add_checked(app, "--rhs", o.rhs, "Number of right-hand sides k", CLI::Range(1, small::kMaxColumns));
  apps::add_checked(app, "--rhs-kind", o.rhs_kind,
                    "a_times_random: B = A X_true with random X_true (the error is reported); random: random B",
                    CLI::IsMember({"a_times_random", "random"}));
  app.add_option("--seed", o.seed, "Seed of the right-hand sides")->capture_default_str();
  apps::add_checked(app, "--tol", o.tolerance, "Target max_j |b_j - A x_j| / |b_j| (true fp64 residual)",
                    CLI::PositiveNumber);
  apps::add_checked(app, "--symmetry-tolerance", o.symmetry_tolerance,
                    "A matrix symmetric to within this (relative, per pair: docs/SOLVERS.md) is solved with its "
                    "symmetric part; a larger asymmetry is refused",
                    CLI::NonNegativeNumber);
  apps::add_checked(app, "--solver", o.solver, "block (default), pcg (the Jacobi-PCG baseline alone)",
                    CLI::IsMember({"block", "pcg"}));
  app.add_flag("--compare", o.compare,
               "Run the block solver with bcsr24, then with cuSPARSE fp32 products, then k Jacobi-PCG solves in fp64");
  apps::add_checked(app, "--max-iterations", o.fcg.max_iterations,
                    "Iteration limit of the block solver (PCG: 100 times this)", CLI::PositiveNumber);
  apps::add_checked(app, "--block-memory", o.fcg.memory, "Direction blocks each new one is A-orthogonalised against",
                    CLI::Range(1, small::kMaxMemory));
  apps::add_checked(app, "--preconditioner", o.preconditioner,
                    "Block solver: chebyshev (bcsr24 or cuSPARSE fp32 products) or jacobi (fp64)",
                    CLI::IsMember({"chebyshev", "jacobi"}));
  apps::add_checked(app, "--cheb-degree", o.polynomial.degree,
                    "Degree of the Chebyshev residual polynomial (odd; degree - 1 products)", CLI::Range(1, 1001));
  apps::add_checked(app, "--cheb-ratio", o.polynomial.ratio,
                    "b / a of the Chebyshev interval (0: ratio factor * degree^2)", CLI::NonNegativeNumber);
  apps::add_checked(app, "--cheb-ratio-factor", o.polynomial.ratio_factor,
                    "b / a = factor * degree^2 when --cheb-ratio is 0", CLI::PositiveNumber);
  apps::add_checked(app, "--cheb-margin", o.polynomial.upper_margin, "Safety margin on the Lanczos upper bound b",
                    CLI::NonNegativeNumber);
  apps::add_checked(app, "--lanczos-steps", o.polynomial.lanczos_steps, "Lanczos steps of the spectrum estimate",
                    CLI::Range(2, small::kMaxLanczos));
  apps::add_checked(app, "--stall-restarts", o.fcg.stall_restarts,
                    "Block solver: on stagnation with the Chebyshev preconditioner, restart (forget the stored "
                    "directions) this many times before the fallback",
                    CLI::Range(0, 1000));
  apps::add_checked(app, "--drop-tolerance", o.fcg.drop_tolerance,
                    "Block solver: whitening pivot below which a direction is dropped", CLI::PositiveNumber);
  apps::add_checked(app, "--check-every", o.check_every, "Jacobi-PCG baseline: iterations between status reads",
                    CLI::PositiveNumber);
  apps::add_checked(app, "--time-limit", o.time_limit,
                    "Wall-clock cap of each solve in seconds (0: none); stop reason time_limit",
                    CLI::NonNegativeNumber);
  app.add_flag("--no-timing", o.no_timing, "No CUDA events around the operations (time to solution only)");
  app.add_flag("--check-spaces", o.check_spaces,
               "Run every operation and the whole solve on the GPU space and on the CPU space with the same inputs and "
               "compare (a debugging aid for a new GPU or build; small matrices)");
  apps::add_checked(
      app, "--cpu-b-rounding", o.cpu_b_rounding,
      "--device cpu with fp16/bf16 inner products: round B per tile as the tile kernels do (tiles) or use it "
      "exactly as the CSR kernel does (exact)",
      CLI::IsMember({"tiles", "exact"}));
  apps::add_checked(app, "--inner-backend", o.inner_backend,
                    "Products of the preconditioner",
                    CLI::IsMember({"bcsr24", "cusparse_csr_f32"}));
  apps::add_checked(app, "--outer-product", o.outer_product,
                    "Block solver on the GPU: who computes the fp64 products A P and B - A X: csr_kernel (the "
                    "solver's own, each row summed in stored order) or cusparse (cuSPARSE SpMM). The Jacobi-PCG "
                    "baseline always uses cuSPARSE",
                    CLI::IsMember({"csr_kernel", "cusparse"}));
  apps::add_checked(app, "--inner-precision", o.inner_precision,
                    "Precision of bcsr24's inner products: fp16, bf16 or split (about fp32 accuracy). The vectors go "
                    "in as fp32 either way (no conversion pass)",
                    CLI::IsMember({"fp16", "bf16", "split"}));
  apps::add_checked(app, "--inner-scaling", o.inner_scaling,
                    "jacobi: the inner operator is D^-1/2 A D^-1/2; none: A itself, its fp16 range left to bcsr24's "
                    "scaling",
                    CLI::IsMember({"none", "jacobi"}));
  apps::add_checked(app, "--fallback", o.fallback,
                    "When the preconditioner stops helping: jacobi = continue with the "
                    "Jacobi preconditioner in fp64; none = stop and say so",
                    CLI::IsMember({"jacobi", "none"}));
  apps::add_checked(app, "--stall-window", o.stall_window,
                    "Iterations over which the best residual must fall by 1/stall-factor", CLI::PositiveNumber);
  apps::add_checked(app, "--stall-factor", o.stall_factor,
                    "The best residual must fall to this fraction of its value a window earlier",
                    CLI::Range(1e-300, 1.0));
  apps::add_checked(app, "--replace-every", o.replace_every,
                    "Recompute the true fp64 residual every this many iterations", CLI::NonNegativeNumber);
  apps::add_checked(app, "--device", o.device,
                    "gpu, or cpu (same algorithm, bcsr24 products emulated; small matrices only)",
                    CLI::IsMember({"gpu", "cpu"}));
  apps::add_distribution_options(
      app, o.gpus, o.mpi, o.partition,
      {"The block solver distributed by rows over GPUs 0..P-1 of this host (SpdSolver with an NCCL communicator, "
       "one thread and rank each; halo exchange beside the local products, one NCCL all-reduce per reduction). 1 "
       "runs the distributed code on one GPU. Needs a build with NCCL",
       "The distributed solve with one MPI process per GPU (mpirun -np P): each process takes device local rank % "
       "device count of its host, reads or generates the whole matrix and keeps its rows; rank 0 prints. Needs a "
       "build with NCCL and MPI",
       "--gpus / --mpi: how rows are assigned to ranks: metis (METIS parts minimising the halo; the solve runs on "
       "the renumbered system, the solution is returned in the file's numbering), contiguous (ranges of the "
       "file's numbering), automatic (metis when this build has METIS)"})
      ->check(CLI::PositiveNumber);
  app.add_option("--json", o.json_path, "Also write the results as JSON to this file");
  app.add_flag("--verbose", o.verbose, "Print every iteration");
}

}  // namespace

void add_options(CLI::App& app, Options& o) {
  app.description(
      "Solve A X = B for SPD A and several right-hand sides to a relative residual tolerance (default 1e-8), checked "
      "with the true fp64 residual.\n"
      "--solver block (default): flexible block CG in fp64 for all right-hand sides, preconditioned by a Chebyshev "
      "polynomial of D^-1/2 A D^-1/2 (degree and interval from Lanczos steps) whose products run through bcsr24 "
      "(--inner-precision split by default) or cuSPARSE CSR fp32 (--inner-backend); every scalar stays on the GPU and "
      "the host waits once per iteration. --compare runs it with bcsr24, then with cuSPARSE fp32, then k "
      "Jacobi-preconditioned CG solves in fp64 (--solver pcg alone).\n"
      "--gpus P / --mpi: the same block solver with A and every block spread by rows over P GPUs (NCCL).\n"
      "Exit status: 0 every run converged, 1 error, 2 bad arguments, 3 a run stopped without converging "
      "(the report says why).");
  add_problem_options(app, o);
  add_solve_options(app, o);
}

void validate(const Options& o) {
  if (o.matrix_path.empty() && o.mesh.empty() && o.diffusion.empty())
    throw UsageError("give --matrix FILE, --generate-mesh NX NY NZ or --generate-diffusion NX NY NZ");
  for (std::int32_t v : o.mesh)
    if (v < 1) throw UsageError("--generate-mesh sizes must be >= 1");
  for (std::int32_t v : o.diffusion)
    if (v < 1) throw UsageError("--generate-diffusion sizes must be >= 1");
  if (o.write_only && o.write_matrix.empty()) throw UsageError("--write-only needs --write-matrix FILE");
  if (o.gpus > 0 && o.device != "gpu") throw UsageError("--gpus needs --device gpu");
  if (o.mpi && o.device != "gpu") throw UsageError("--mpi needs --device gpu");
  if (o.partition == "metis" && !bcsr24::metis_available())
    throw UsageError("--partition metis: this build of bcsr24 has no METIS (install libmetis-dev and reconfigure); "
                     "use --partition contiguous");
  if (o.distributed() && o.solver != "block")
    throw UsageError("--gpus and --mpi run the block solver (--solver block), not --solver " + o.solver);
  if (o.distributed()) {
    if (o.compare) throw UsageError("--compare runs on one GPU (the comparisons' cuSPARSE products): leave out --gpus");
    if (o.inner_backend != "bcsr24")
      throw UsageError("--gpus / --mpi: the block solver's inner products are bcsr24's distributed operator "
                       "(--inner-backend bcsr24)");
    if (o.time_limit > 0.0)
      throw UsageError("--gpus / --mpi: no --time-limit (each rank's clock would stop it at a different iteration)");
  }
  if (o.check_spaces && o.device != "gpu") throw UsageError("--check-spaces compares the GPU space with the CPU space");
#if BCSR24_HAS_NCCL
  if (o.mpi && !bcsr24::ranks::mpi_available())
    throw UsageError("--mpi: this bcsr24_solve was built without MPI (CMake found none; --gpus P runs on one host)");
#else
  if (o.gpus > 0 || o.mpi)
    throw UsageError(std::string(o.mpi ? "--mpi" : "--gpus") +
                     ": this bcsr24_solve was built without NCCL (no distributed solve)");
#endif
}

BlockRunSettings block_settings(const Options& o, InnerBackend backend) {
  BlockRunSettings s;
  s.device = o.device;
  s.backend = backend;
  s.precision = precision_from_name(o.inner_precision);
  s.jacobi_scaling = o.inner_scaling == "jacobi";
  s.outer_product = o.outer_product == "cusparse" ? OuterProduct::cusparse : OuterProduct::csr_kernel;
  s.chebyshev = o.preconditioner == "chebyshev";
  s.fcg = o.fcg;
  s.fcg.tolerance = o.tolerance;
  s.fcg.replace_every = std::max(1, o.replace_every);
  s.fcg.stall_window = o.stall_window;
  s.fcg.stall_factor = o.stall_factor;
  s.fcg.fallback_jacobi = o.fallback == "jacobi";
  s.fcg.time_limit_seconds = o.time_limit;
  s.polynomial = o.polynomial;
  s.cpu_rounding = o.cpu_b_rounding == "tiles" ? BRounding::tiles : BRounding::exact;
  s.timing = !o.no_timing;
  s.warm_up = o.device == "gpu";
  s.verbose = o.verbose;
  return s;
}

PcgOptions pcg_options(const Options& o) {
  PcgOptions p;
  p.tolerance = o.tolerance;
  p.max_iterations = 100 * o.fcg.max_iterations;
  p.check_every = o.check_every;
  p.time_limit_seconds = o.time_limit;
  return p;
}

}  // namespace bcsr24::solver
