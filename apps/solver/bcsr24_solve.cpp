// bcsr24_solve: mixed-precision SPD solver for several right-hand sides. The default (--solver block) is a
// flexible block CG in fp64 for all right-hand sides at once, preconditioned by a Chebyshev polynomial of the
// Jacobi-scaled matrix whose products run through bcsr24 (or cuSPARSE CSR fp32 for comparison), with every number
// kept on the GPU; --compare adds the same solver with cuSPARSE fp32 products and k Jacobi-PCG solves in fp64
// (--solver pcg alone). --solver legacy is the earlier flexible CG with a block CG inside, which the distributed
// runs (--gpus, --mpi) use. Reports iterations, time to solution and where it goes, and why each run stopped.

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "bcsr24/device.hpp"
#include "bcsr24/spmm_plan.hpp"
#include "bcsr24/error.hpp"
#include "bcsr24/matrix_market.hpp"
#include "block_runs.hpp"
#include "cpu_system.hpp"
#include "diffusion_matrix.hpp"
#include "flexible_cg.hpp"
#include "gpu_system.hpp"
#if BCSR24_HAS_NCCL
#include "distributed_solve.hpp"
#include "rank_session.hpp"
#else
namespace bcsr24::ranks {
class Session;  // --mpi needs NCCL: only null pointers to it in this build
}
#endif
#include "mesh_matrix.hpp"
#include "problem.hpp"

namespace {

using json = nlohmann::json;
using namespace bcsr24::solver;

constexpr const char* kProgram = "bcsr24_solve";
/// Exit codes: 0 every run converged, 1 runtime error, 2 bad command line, 3 a run stopped unconverged.
constexpr int kExitRuntimeError = 1;
constexpr int kExitUsage = 2;
constexpr int kExitNotConverged = 3;
/// Direction memory is bounded by the GPU combine kernel's term count.
constexpr int kMaxMemory = 23;

class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct Options {
  std::string matrix_path;
  std::vector<std::int32_t> mesh;       ///< NX NY NZ when --generate-mesh is given
  std::int32_t dofs_per_node = 3;
  int stencil = 27;
  double diagonal_margin = 0.01;
  std::uint64_t mesh_seed = 1;
  std::vector<std::int32_t> diffusion;  ///< NX NY NZ when --generate-diffusion is given
  std::string coefficients = "inclusions";
  double contrast = 1e6;
  double fill = 0.1;
  std::int32_t inclusion_size = 4;
  std::int32_t layer_thickness = 2;
  double sigma = 2.5;
  std::int32_t correlation = 4;
  std::vector<double> anisotropy{1.0, 1.0, 1.0};
  std::uint64_t diffusion_seed = 1;
  std::string write_matrix;
  bool write_only = false;
  int rhs = 16;
  std::string rhs_kind = "a_times_random";
  std::uint64_t seed = 1;
  double tolerance = 1e-8;
  std::string solver = "block";
  // Block solver.
  int max_iterations = 1000;
  int block_memory = 1;
  int cheb_degree = 15;
  double cheb_ratio = 0.0;
  double cheb_ratio_factor = 0.25;
  double cheb_margin = 0.05;
  int lanczos_steps = 30;
  std::string preconditioner = "chebyshev";
  double drop_tolerance = 1e-10;
  std::string cpu_b_rounding = "tiles";
  int check_every = 8;
  double time_limit = 0.0;
  bool no_timing = false;
  bool check_spaces = false;
  // Legacy solver.
  int max_outer = 40000;
  int memory = 8;
  int inner_iters = 30;
  double inner_tolerance = 1e-2;
  int fallback_window = 4000;
  // Both.
  std::string inner_backend = "bcsr24";
  bool compare = false;
  std::string inner_scaling;    ///< empty: the solver's default (block: jacobi, legacy: none)
  std::string inner_precision;  ///< empty: the solver's default (block: split, legacy: fp16)
  std::string fallback = "jacobi";
  int stall_window = -1;        ///< -1: the solver's default (block 25, legacy 5)
  double stall_factor = 0.5;
  int replace_every = -1;       ///< -1: the solver's default (block 1, legacy 50)
  std::string device = "gpu";
  int gpus = 0;  ///< 0: one GPU, the plain space; P >= 1: the distributed space on P GPUs
  bool mpi = false;  ///< the distributed space with one MPI process per GPU (mpirun -np P)
  std::string json_path;
  bool verbose = false;

  bool legacy() const { return solver == "legacy" || gpus > 0 || mpi; }
  std::string scaling() const { return !inner_scaling.empty() ? inner_scaling : legacy() ? "none" : "jacobi"; }
  std::string precision() const { return !inner_precision.empty() ? inner_precision : legacy() ? "fp16" : "split"; }
  int window() const { return stall_window >= 0 ? stall_window : legacy() ? 5 : 25; }
  int replace() const { return replace_every >= 0 ? replace_every : legacy() ? 50 : 1; }
};

void add_options(CLI::App& app, Options& o) {
  app.description(
      "Solve A X = B for SPD A and several right-hand sides to a relative residual tolerance (default 1e-8), checked "
      "with the true fp64 residual.\n"
      "--solver block (default): flexible block CG in fp64 for all right-hand sides, preconditioned by a Chebyshev "
      "polynomial of D^-1/2 A D^-1/2 (degree and interval from Lanczos steps) whose products run through bcsr24 "
      "(--inner-precision split by default) or cuSPARSE CSR fp32 (--inner-backend); every scalar stays on the GPU and "
      "the host waits once per iteration. --compare runs it with bcsr24, then with cuSPARSE fp32, then k "
      "Jacobi-preconditioned CG solves in fp64 (--solver pcg alone).\n"
      "--solver legacy: flexible CG with a block CG inside (the distributed runs, --gpus / --mpi, use it).\n"
      "Exit status: 0 every run converged, 1 error, 2 bad arguments, 3 a run stopped without converging "
      "(the report says why).");
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
  app.add_option("--dofs-per-node", o.dofs_per_node, "Unknowns per mesh node")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--stencil", o.stencil, "Mesh stencil: 7 or 27 points")->capture_default_str()->check(CLI::IsMember({7, 27}));
  app.add_option("--diag-margin", o.diagonal_margin,
                 "Mesh diagonal = (1 + margin) * off-diagonal row sum; smaller = worse conditioned")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--mesh-seed", o.mesh_seed, "Seed of the mesh values")->capture_default_str();
  app.add_option("--coefficients", o.coefficients,
                 "Diffusion coefficient field: constant, inclusions (random cubes of --contrast in 1), layers "
                 "(z-layers log-uniform in [1, --contrast]), lognormal (exp(--sigma g), g a smoothed Gaussian field)")
      ->capture_default_str()
      ->check(CLI::IsMember({"constant", "inclusions", "layers", "lognormal"}));
  app.add_option("--contrast", o.contrast, "Diffusion: coefficient of the inclusions, or range of the layers")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--fill", o.fill, "Diffusion: volume fraction of the inclusions")->capture_default_str()->check(CLI::Range(0.0, 1.0));
  app.add_option("--inclusion-size", o.inclusion_size, "Diffusion: inclusion edge in cells")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--layer-thickness", o.layer_thickness, "Diffusion: layer thickness in cells")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--sigma", o.sigma, "Diffusion: standard deviation of ln k (lognormal)")->capture_default_str()->check(CLI::NonNegativeNumber);
  app.add_option("--correlation", o.correlation, "Diffusion: smoothing half width in cells (lognormal)")->capture_default_str()->check(CLI::NonNegativeNumber);
  app.add_option("--anisotropy", o.anisotropy, "Diffusion: K = k diag(AX, AY, AZ), e.g. 1 1 1e-4")->expected(3);
  app.add_option("--diffusion-seed", o.diffusion_seed, "Seed of the coefficient field")->capture_default_str();
  app.add_option("--write-matrix", o.write_matrix, "Also write the matrix (read or generated) to this Matrix Market file");
  app.add_flag("--write-only", o.write_only, "With --write-matrix: write it and stop");
  app.add_option("--rhs", o.rhs, "Number of right-hand sides k (the block solver takes at most 64)")
      ->capture_default_str()
      ->check(CLI::Range(1, 256));
  app.add_option("--rhs-kind", o.rhs_kind,
                 "a_times_random: B = A X_true with random X_true (the error is reported); random: random B")
      ->capture_default_str()
      ->check(CLI::IsMember({"a_times_random", "random"}));
  app.add_option("--seed", o.seed, "Seed of the right-hand sides")->capture_default_str();
  app.add_option("--tol", o.tolerance, "Target max_j |b_j - A x_j| / |b_j| (true fp64 residual)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--solver", o.solver, "block (default), pcg (the Jacobi-PCG baseline alone), legacy")
      ->capture_default_str()
      ->check(CLI::IsMember({"block", "pcg", "legacy"}));
  app.add_flag("--compare", o.compare,
               "block: run it with bcsr24, then with cuSPARSE fp32 products, then k Jacobi-PCG solves in fp64; "
               "legacy: both inner backends");
  app.add_option("--max-iterations", o.max_iterations, "Iteration limit of the block solver (PCG: 100 times this)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--block-memory", o.block_memory, "Direction blocks each new one is A-orthogonalised against")
      ->capture_default_str()
      ->check(CLI::Range(1, small::kMaxMemory));
  app.add_option("--preconditioner", o.preconditioner, "Block solver: chebyshev (bcsr24 or cuSPARSE fp32 products) or jacobi (fp64)")
      ->capture_default_str()
      ->check(CLI::IsMember({"chebyshev", "jacobi"}));
  app.add_option("--cheb-degree", o.cheb_degree, "Degree of the Chebyshev residual polynomial (odd; degree - 1 products)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1001));
  app.add_option("--cheb-ratio", o.cheb_ratio, "b / a of the Chebyshev interval (0: ratio factor * degree^2)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--cheb-ratio-factor", o.cheb_ratio_factor, "b / a = factor * degree^2 when --cheb-ratio is 0")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--cheb-margin", o.cheb_margin, "Safety margin on the Lanczos upper bound b")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--lanczos-steps", o.lanczos_steps, "Lanczos steps of the spectrum estimate")
      ->capture_default_str()
      ->check(CLI::Range(2, small::kMaxLanczos));
  app.add_option("--drop-tolerance", o.drop_tolerance, "Block solver: whitening pivot below which a direction is dropped")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--check-every", o.check_every, "Jacobi-PCG baseline: iterations between status reads")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--time-limit", o.time_limit, "Wall-clock cap of each solve in seconds (0: none); stop reason time_limit")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_flag("--no-timing", o.no_timing, "No CUDA events around the operations (time to solution only)");
  app.add_flag("--check-spaces", o.check_spaces,
               "Run every operation and the whole solve on the GPU space and on the CPU space with the same inputs and "
               "compare (a debugging aid for a new GPU or build; small matrices)");
  app.add_option("--cpu-b-rounding", o.cpu_b_rounding,
                 "--device cpu with fp16/bf16 inner products: round B per tile as the tile kernels do (tiles) or use it "
                 "exactly as the CSR kernel does (exact)")
      ->capture_default_str()
      ->check(CLI::IsMember({"tiles", "exact"}));
  app.add_option("--max-outer", o.max_outer, "Legacy: outer iteration limit")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--outer-memory", o.memory, "Legacy: previous directions each outer direction is orthogonalised against")
      ->capture_default_str()
      ->check(CLI::Range(1, kMaxMemory));
  app.add_option("--inner-iters", o.inner_iters, "Legacy: products (block CG iterations) per inner solve")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--inner-tol", o.inner_tolerance, "Legacy: inner solve stops early when every column's residual fell by this")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--inner-backend", o.inner_backend, "Products of the preconditioner (block) or inner solve (legacy)")
      ->capture_default_str()
      ->check(CLI::IsMember({"bcsr24", "cusparse_csr_f32"}));
  app.add_option("--inner-precision", o.inner_precision,
                 "Precision of bcsr24's inner products: fp16, bf16 or split (about fp32 accuracy); default split for "
                 "the block solver, fp16 for legacy. The vectors go in as fp32 either way (no conversion pass)")
      ->check(CLI::IsMember({"fp16", "bf16", "split"}));
  app.add_option("--inner-scaling", o.inner_scaling,
                 "jacobi: the inner operator is D^-1/2 A D^-1/2 (default for the block solver); none: A itself "
                 "(default for legacy), its fp16 range left to bcsr24's scaling")
      ->check(CLI::IsMember({"none", "jacobi"}));
  app.add_option("--fallback", o.fallback,
                 "When the preconditioner (block) or inner solve (legacy) stops helping: jacobi = continue with the "
                 "Jacobi preconditioner in fp64; none = stop and say so")
      ->capture_default_str()
      ->check(CLI::IsMember({"jacobi", "none"}));
  app.add_option("--stall-window", o.stall_window,
                 "Iterations over which the best residual must fall by 1/stall-factor (default: block 25, legacy 5)")
      ->check(CLI::PositiveNumber);
  app.add_option("--stall-factor", o.stall_factor, "Required residual reduction factor per window")
      ->capture_default_str()
      ->check(CLI::Range(1e-300, 1.0));
  app.add_option("--fallback-window", o.fallback_window, "The same window in the Jacobi phase (stagnation)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--replace-every", o.replace_every,
                 "Recompute the true fp64 residual every this many iterations (default: block 1, legacy 50)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--device", o.device, "gpu, or cpu (same algorithm, bcsr24 products emulated; small matrices only)")
      ->capture_default_str()
      ->check(CLI::IsMember({"gpu", "cpu"}));
  CLI::Option* gpus =
      app.add_option("--gpus", o.gpus,
                     "Legacy solver distributed by rows over GPUs 0..P-1 of this host (one thread and NCCL rank each; "
                     "halo exchange and NCCL all-reduce). 1 runs the distributed code on one GPU. Needs a build with "
                     "NCCL; the block solver runs on one GPU")
          ->check(CLI::PositiveNumber);
  app.add_flag("--mpi", o.mpi,
               "The distributed legacy solve with one MPI process per GPU (mpirun -np P): each process takes device "
               "local rank % device count of its host, reads or generates the whole matrix and keeps its rows; "
               "rank 0 prints. Needs a build with NCCL and MPI")
      ->excludes(gpus);
  app.add_option("--json", o.json_path, "Also write the results as JSON to this file");
  app.add_flag("--verbose", o.verbose, "Print every iteration");
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
  if ((o.gpus > 0 || o.mpi) && o.solver != "legacy" && o.solver != "block")
    throw UsageError("--gpus and --mpi run the legacy solver only");
  if (o.check_spaces && o.device != "gpu") throw UsageError("--check-spaces compares the GPU space with the CPU space");
  if (!o.legacy() && o.rhs > small::kMaxColumns)
    throw UsageError("the block solver takes at most " + std::to_string(small::kMaxColumns) +
                     " right-hand sides (--solver legacy takes up to 256)");
#if BCSR24_HAS_NCCL
  if (o.mpi && !bcsr24::ranks::mpi_available())
    throw UsageError("--mpi: this bcsr24_solve was built without MPI (CMake found none; --gpus P runs on one host)");
#else
  if (o.gpus > 0 || o.mpi)
    throw UsageError(std::string(o.mpi ? "--mpi" : "--gpus") +
                     ": this bcsr24_solve was built without NCCL (no distributed solve)");
#endif
}

std::string sci(double v, int digits = 2) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.*e", digits, v);
  return buffer;
}

std::string fixed(double v, int digits = 3) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.*f", digits, v);
  return buffer;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

/// Bytes of A one product reads: the two tile lists for bcsr24, and CSR with fp32 values for cuSPARSE. A is
/// the bulk of a product's memory traffic for small k, so their ratio is the first suitability indicator.
double bcsr24_bytes(const bcsr24::SparseOperator& op) {
  return double(op.census().sparse24_bytes + op.census().dense_bytes);
}
double csr_f32_bytes(const bcsr24::SparseOperator& op) { return double(op.nnz()) * 8.0 + (op.rows() + 1.0) * 4.0; }

void print_census(const bcsr24::SparseOperator& op, bool scaled) {
  const bcsr24::TileCensus& c = op.census();
  const bcsr24::Fp16Scaling& s = op.scaling();
  std::printf("bcsr24 census%s: %lld 2:4 tiles + %lld dense tiles (2:4 share %.2f), %.1f nonzeros per stored tile of 512\n",
              scaled ? " (of D^-1/2 A D^-1/2)" : "", static_cast<long long>(c.sparse24_tiles),
              static_cast<long long>(c.dense_tiles), c.sparse24_share(), c.nnz_per_tile());
  std::printf("fp16 scaling: |a| in [%s, %s], scale 2^%d; %lld would overflow and %lld underflow unscaled; after "
              "scaling %lld subnormal, %lld flushed to zero\n",
              sci(s.min_abs_nonzero).c_str(), sci(s.max_abs).c_str(), s.exponent,
              static_cast<long long>(s.overflow_count), static_cast<long long>(s.underflow_count),
              static_cast<long long>(s.subnormal_count), static_cast<long long>(s.flushed_count));
  std::printf("suitability: A occupies %.1f MB as bcsr24 tile lists vs %.1f MB as CSR with fp32 values (%.2fx)\n",
              bcsr24_bytes(op) / 1e6, csr_f32_bytes(op) / 1e6, bcsr24_bytes(op) / csr_f32_bytes(op));
}

struct RunReport {
  InnerBackend backend;
  OuterResult result;
  double solve_seconds = 0.0, preprocess_seconds = 0.0, upload_seconds = 0.0;
  std::optional<GpuTimings> timings;
  double host_residual = 0.0, error = -1.0;
  std::int64_t device_bytes = 0;  ///< on several GPUs: the largest of the ranks
  int gpus = 0;                   ///< 0: single-GPU space
  const char* launch = "";        ///< on several GPUs: "threads" or "mpi"
  json ranks = json::array();     ///< per rank, on several GPUs
  bool ranks_agree = true;
};

OuterOptions outer_options(const Options& o) {
  OuterOptions outer;
  outer.tolerance = o.tolerance;
  outer.max_outer = o.max_outer;
  outer.memory = o.memory;
  outer.stall_window = o.window();
  outer.stall_factor = o.stall_factor;
  outer.fallback = o.fallback == "jacobi" ? Fallback::jacobi : Fallback::none;
  outer.fallback_window = o.fallback_window;
  outer.replace_every = o.replace();
  return outer;
}

InnerOptions inner_solve_options(const Options& o) {
  InnerOptions inner;
  inner.max_products = o.inner_iters;
  inner.tolerance = o.inner_tolerance;
  return inner;
}

/// Prints every outer iteration with --verbose.
OuterObserver progress_printer(const Options& o) {
  if (!o.verbose) return {};
  return [](const OuterIterationRecord& r) {
    std::printf("  outer %4d: max relative residual %s", r.iteration, sci(r.max_relative_residual).c_str());
    if (r.inner)
      std::printf("  (inner: %d products, relative residual %s, deflated %d%s%s)", r.inner_stats.products,
                  sci(r.inner_stats.relative_residual).c_str(), r.inner_stats.max_deflated,
                  r.inner_stats.breakdown ? ", breakdown: " : "", r.inner_stats.breakdown_reason.c_str());
    else
      std::printf("  (Jacobi)");
    std::printf("\n");
  };
}

/// `mpi`: this process's MPI session (--mpi), else null. Under MPI every process calls it; only the root's report
/// holds the gathered figures and the host check.
RunReport run_legacy_backend(const Problem& problem, InnerBackend backend, const Options& o, bool first, json& matrix_json,
                      const bcsr24::ranks::Session* mpi) {
  RunReport report;
  report.backend = backend;
  const bool scaled = o.scaling() == "jacobi";
  bcsr24::OperatorOptions operator_options;
  operator_options.precision = bcsr24::precision_from_name(o.precision());
  OuterOptions outer = outer_options(o);
  InnerOptions inner_options = inner_solve_options(o);
  const OuterObserver observer = progress_printer(o);
#if BCSR24_HAS_NCCL
  if (o.gpus > 0 || mpi) {
    DistributedSolveSettings settings;
    settings.gpus = o.gpus;
    settings.mpi_session = mpi;
    settings.backend = backend;
    settings.jacobi_scaling = scaled;
    settings.operator_options = operator_options;
    settings.outer = outer;
    settings.inner = inner_options;
    settings.observer = observer;
    DistributedSolveResult d = solve_distributed(problem, settings);
    report.gpus = mpi ? mpi->ranks() : o.gpus;
    report.launch = mpi ? "mpi" : "threads";
    report.result = std::move(d.result);
    report.preprocess_seconds = d.preprocess_seconds;
    report.upload_seconds = d.upload_seconds;
    report.solve_seconds = d.solve_seconds;
    report.timings = d.timings;
    report.device_bytes = d.max_device_bytes;
    report.ranks_agree = d.ranks_agree;
    for (const RankSolveStats& r : d.ranks)
      report.ranks.push_back({{"rank", r.rank},
                              {"row_begin", r.row_begin},
                              {"rows", r.rows},
                              {"nnz", r.nnz},
                              {"halo_rows", r.halo_rows},
                              {"send_rows", r.send_rows},
                              {"device_bytes", r.device_bytes},
                              {"outer_iterations", r.outer_iterations},
                              {"preprocess_seconds", r.preprocess_seconds},
                              {"upload_seconds", r.upload_seconds},
                              {"solve_seconds", r.solve_seconds},
                              {"inner_spmm_seconds", r.timings.inner_spmm_ms / 1e3},
                              {"outer_spmm_seconds", r.timings.outer_spmm_ms / 1e3}});
    if (d.x.empty()) return report;  // an MPI process other than the root: the solution was gathered there
    report.host_residual = max_relative_residual_host(problem.a, d.x, problem.b, problem.k);
    if (!problem.x_true.empty()) report.error = max_relative_error(d.x, problem.x_true, problem.k);
    return report;
  }
#endif
  InnerMatrix inner = prepare_inner_matrix(problem.a, backend, scaled, operator_options);
  report.preprocess_seconds = inner.preprocess_seconds;
  if (inner.op) {
    print_census(*inner.op, scaled);
    if (first || !matrix_json.contains("bcsr24")) matrix_json["bcsr24"] = operator_census_json(*inner.op);
  }

  const int slots = outer_slot_count(o.memory);
  auto upload_start = std::chrono::steady_clock::now();
  std::vector<double> x;
  if (o.device == "gpu") {
    GpuSystem space(problem.a, inner, problem.k, slots);
    space.set_slot(OuterSlots::b, problem.b);
    report.upload_seconds = seconds_since(upload_start);
    report.device_bytes = space.device_bytes();
    space.synchronize();
    const auto start = std::chrono::steady_clock::now();
    report.result = flexible_cg(space, outer, inner_options, observer);
    space.synchronize();
    report.solve_seconds = seconds_since(start);
    report.timings = space.timings();  // the setup made no products: these are the solve's
    x = space.slot(OuterSlots::x);
  } else {
    CpuSystem space(problem.a, inner, problem.k, slots);
    space.set_slot(OuterSlots::b, problem.b);
    report.upload_seconds = seconds_since(upload_start);
    const auto start = std::chrono::steady_clock::now();
    report.result = flexible_cg(space, outer, inner_options, observer);
    report.solve_seconds = seconds_since(start);
    x = space.slot(OuterSlots::x);
  }
  // An independent fp64 check on the host of what the solver reports.
  report.host_residual = max_relative_residual_host(problem.a, x, problem.b, problem.k);
  if (!problem.x_true.empty()) report.error = max_relative_error(x, problem.x_true, problem.k);
  return report;
}

void print_legacy_report(const RunReport& r) {
  const OuterResult& res = r.result;
  std::printf("%s\n", res.message.c_str());
  if (res.fallback_iteration >= 0)
    std::printf("fallback at outer iteration %d: %s\n", res.fallback_iteration, res.fallback_reason.c_str());
  std::printf("outer iterations %d (%d Jacobi-preconditioned), inner solves %d, inner products %d, inner breakdowns %d, "
              "residual replacements %d\n",
              res.outer_iterations, res.jacobi_iterations, res.inner_solves, res.inner_products, res.inner_breakdowns,
              res.residual_replacements);
  std::printf("max true relative residual %s (host fp64 check %s)", sci(res.max_final_relative_residual).c_str(),
              sci(r.host_residual).c_str());
  if (r.error >= 0.0) std::printf(", max relative error vs X_true %s", sci(r.error).c_str());
  std::printf("\n");
  if (r.timings) {
    const GpuTimings& t = *r.timings;
    const double total_ms = r.solve_seconds * 1e3;
    const auto share = [&](double ms) { return fixed(total_ms > 0 ? 100.0 * ms / total_ms : 0.0, 1) + "%"; };
    const char* product_name = r.backend == InnerBackend::bcsr24 ? "bcsr24 SpmmPlan::run" : "cuSPARSE CSR fp32 SpMM";
    std::printf("time: solve %s s; %s %s s = %s of the solve", fixed(r.solve_seconds).c_str(), product_name,
                fixed(t.inner_spmm_ms / 1e3).c_str(), share(t.inner_spmm_ms).c_str());
    std::printf("; outer cuSPARSE fp64 %s s = %s; the rest (block CG dense algebra, host synchronisation) %s s\n",
                fixed(t.outer_spmm_ms / 1e3).c_str(), share(t.outer_spmm_ms).c_str(),
                fixed(r.solve_seconds - (t.inner_spmm_ms + t.outer_spmm_ms) / 1e3).c_str());
    std::printf("products: %lld inner (%.3f ms each), %lld outer fp64 (%.3f ms each); device memory %.1f MiB\n",
                static_cast<long long>(t.inner_products),
                t.inner_products ? t.inner_spmm_ms / double(t.inner_products) : 0.0,
                static_cast<long long>(t.outer_products),
                t.outer_products ? t.outer_spmm_ms / double(t.outer_products) : 0.0, double(r.device_bytes) / 1048576.0);
  } else {
    std::printf("time: solve %s s on the CPU (products not timed separately)\n", fixed(r.solve_seconds).c_str());
  }
  std::printf("setup: inner matrix preparation %s s (host), space setup and upload %s s\n",
              fixed(r.preprocess_seconds).c_str(), fixed(r.upload_seconds).c_str());
  if (r.gpus > 0) {
    std::printf("distributed over %d GPU%s (%s; times and product figures: the slowest rank; memory: the "
                "largest)%s\n",
                r.gpus, r.gpus == 1 ? "" : "s",
                std::string(r.launch) == "mpi" ? "one MPI process each" : "one thread each",
                r.ranks_agree ? "" : "; WARNING: the ranks made different numbers of outer iterations");
    for (const json& rank : r.ranks)
      std::printf("  rank %d: rows %d (from %d), %lld nonzeros, halo rows in %d / out %d per product, device memory "
                  "%.1f MiB, solve %s s\n",
                  rank["rank"].get<int>(), rank["rows"].get<int>(), rank["row_begin"].get<int>(),
                  static_cast<long long>(rank["nnz"].get<std::int64_t>()), rank["halo_rows"].get<int>(),
                  rank["send_rows"].get<int>(), double(rank["device_bytes"].get<std::int64_t>()) / 1048576.0,
                  fixed(rank["solve_seconds"].get<double>()).c_str());
  }
}

json legacy_report_json(const RunReport& r) {
  const OuterResult& res = r.result;
  json history = json::array();
  for (const OuterIterationRecord& h : res.history)
    history.push_back({{"iteration", h.iteration},
                       {"max_relative_residual", h.max_relative_residual},
                       {"inner", h.inner},
                       {"inner_products", h.inner_stats.products},
                       {"inner_relative_residual", h.inner_stats.relative_residual},
                       {"inner_deflated", h.inner_stats.max_deflated},
                       {"inner_breakdown", h.inner_stats.breakdown ? h.inner_stats.breakdown_reason : ""}});
  json j = {{"solver", "legacy"},
            {"backend", inner_backend_name(r.backend)},
            {"stop", stop_reason_name(res.stop)},
            {"message", res.message},
            {"fallback_iteration", res.fallback_iteration},
            {"fallback_reason", res.fallback_reason},
            {"outer_iterations", res.outer_iterations},
            {"jacobi_iterations", res.jacobi_iterations},
            {"inner_solves", res.inner_solves},
            {"inner_products", res.inner_products},
            {"inner_breakdowns", res.inner_breakdowns},
            {"residual_replacements", res.residual_replacements},
            {"max_relative_residual", res.max_final_relative_residual},
            {"host_check_relative_residual", r.host_residual},
            {"relative_residual_per_column", res.final_relative_residual},
            {"solve_seconds", r.solve_seconds},
            {"preprocess_seconds", r.preprocess_seconds},
            {"upload_seconds", r.upload_seconds},
            {"history", history}};
  if (r.error >= 0.0) j["max_relative_error"] = r.error;
  j["gpus"] = r.gpus;
  if (r.gpus > 0) {
    j["launch"] = r.launch;
    j["ranks"] = r.ranks;
    j["ranks_agree"] = r.ranks_agree;
  }
  if (r.timings) {
    const GpuTimings& t = *r.timings;
    const double total_ms = r.solve_seconds * 1e3;
    j["gpu"] = {{"inner_spmm_seconds", t.inner_spmm_ms / 1e3},
                {"inner_product_seconds", t.inner_spmm_ms / 1e3},
                {"outer_spmm_seconds", t.outer_spmm_ms / 1e3},
                {"inner_spmm_share", total_ms > 0 ? t.inner_spmm_ms / total_ms : 0.0},
                {"inner_product_share", total_ms > 0 ? t.inner_spmm_ms / total_ms : 0.0},
                {"outer_spmm_share", total_ms > 0 ? t.outer_spmm_ms / total_ms : 0.0},
                {"inner_products", t.inner_products},
                {"outer_products", t.outer_products},
                {"device_bytes", r.device_bytes}};
  }
  return j;
}

/// The matrix to solve, read or generated, with its description for the JSON.
bcsr24::CsrMatrix load_matrix(const Options& o, std::string& name, json& matrix_json) {
  if (!o.mesh.empty()) {
    MeshSpec spec;
    spec.nx = o.mesh[0];
    spec.ny = o.mesh[1];
    spec.nz = o.mesh[2];
    spec.dofs_per_node = o.dofs_per_node;
    spec.stencil = o.stencil;
    spec.diagonal_margin = o.diagonal_margin;
    spec.seed = o.mesh_seed;
    name = "mesh_" + std::to_string(spec.nx) + "x" + std::to_string(spec.ny) + "x" + std::to_string(spec.nz) + "_d" +
           std::to_string(spec.dofs_per_node) + "_s" + std::to_string(spec.stencil);
    matrix_json["generator"] = {{"kind", "mesh"}, {"nodes", o.mesh}, {"dofs_per_node", spec.dofs_per_node},
                                {"stencil", spec.stencil}, {"diagonal_margin", spec.diagonal_margin},
                                {"seed", spec.seed}};
    return generate_mesh_matrix(spec);
  }
  if (!o.diffusion.empty()) {
    DiffusionSpec spec;
    spec.nx = o.diffusion[0];
    spec.ny = o.diffusion[1];
    spec.nz = o.diffusion[2];
    spec.field = coefficient_field_from_name(o.coefficients);
    spec.contrast = o.contrast;
    spec.fill = o.fill;
    spec.inclusion_size = o.inclusion_size;
    spec.layer_thickness = o.layer_thickness;
    spec.sigma = o.sigma;
    spec.correlation = o.correlation;
    spec.anisotropy = {o.anisotropy[0], o.anisotropy[1], o.anisotropy[2]};
    spec.seed = o.diffusion_seed;
    name = diffusion_name(spec);
    matrix_json["generator"] = {{"kind", "diffusion"}, {"cells", o.diffusion}, {"coefficients", o.coefficients},
                                {"contrast", spec.contrast}, {"fill", spec.fill},
                                {"inclusion_size", spec.inclusion_size}, {"layer_thickness", spec.layer_thickness},
                                {"sigma", spec.sigma}, {"correlation", spec.correlation},
                                {"anisotropy", o.anisotropy}, {"seed", spec.seed}};
    return generate_diffusion_matrix(spec);
  }
  name = o.matrix_path.substr(o.matrix_path.find_last_of('/') + 1);
  return bcsr24::read_matrix_market(o.matrix_path);
}

BlockRunSettings block_settings(const Options& o, InnerBackend backend) {
  BlockRunSettings s;
  s.device = o.device;
  s.backend = backend;
  s.precision = bcsr24::precision_from_name(o.precision());
  s.jacobi_scaling = o.scaling() == "jacobi";
  s.chebyshev = o.preconditioner == "chebyshev";
  s.fcg.tolerance = o.tolerance;
  s.fcg.max_iterations = o.max_iterations;
  s.fcg.memory = o.block_memory;
  s.fcg.drop_tolerance = o.drop_tolerance;
  s.fcg.replace_every = std::max(1, o.replace());
  s.fcg.stall_window = o.window();
  s.fcg.stall_factor = o.stall_factor;
  s.fcg.fallback_jacobi = o.fallback == "jacobi";
  s.fcg.time_limit_seconds = o.time_limit;
  s.polynomial.degree = o.cheb_degree;
  s.polynomial.ratio = o.cheb_ratio;
  s.polynomial.ratio_factor = o.cheb_ratio_factor;
  s.polynomial.upper_margin = o.cheb_margin;
  s.polynomial.lanczos_steps = o.lanczos_steps;
  s.cpu_rounding = o.cpu_b_rounding == "tiles" ? BRounding::tiles : BRounding::exact;
  s.timing = !o.no_timing;
  s.warm_up = o.device == "gpu";
  s.verbose = o.verbose;
  return s;
}

PcgOptions pcg_options(const Options& o) {
  PcgOptions p;
  p.tolerance = o.tolerance;
  p.max_iterations = 100 * o.max_iterations;
  p.check_every = o.check_every;
  p.time_limit_seconds = o.time_limit;
  return p;
}

json settings_json(const Options& o) {
  return {{"solver", o.legacy() ? "legacy" : o.solver},
          {"rhs", o.rhs},
          {"rhs_kind", o.rhs_kind},
          {"seed", o.seed},
          {"tolerance", o.tolerance},
          {"compare", o.compare},
          {"inner_backend", o.inner_backend},
          {"inner_scaling", o.scaling()},
          {"inner_precision", o.precision()},
          {"max_iterations", o.max_iterations},
          {"block_memory", o.block_memory},
          {"preconditioner", o.preconditioner},
          {"cheb_degree", o.cheb_degree},
          {"cheb_ratio", o.cheb_ratio},
          {"cheb_ratio_factor", o.cheb_ratio_factor},
          {"cheb_margin", o.cheb_margin},
          {"lanczos_steps", o.lanczos_steps},
          {"check_every", o.check_every},
          {"time_limit", o.time_limit},
          {"max_outer", o.max_outer},
          {"outer_memory", o.memory},
          {"inner_iters", o.inner_iters},
          {"inner_tolerance", o.inner_tolerance},
          {"fallback", o.fallback},
          {"stall_window", o.window()},
          {"replace_every", o.replace()},
          {"device", o.device},
          {"gpus", o.gpus},
          {"mpi", o.mpi}};
}

void write_json(const Options& o, const json& matrix_json, const json& runs, const json& extra) {
  json out = {{"program", kProgram}, {"matrix", matrix_json}, {"settings", settings_json(o)}, {"runs", runs}};
  for (const auto& [key, value] : extra.items()) out[key] = value;
  std::ofstream file(o.json_path);
  if (!(file << out.dump(2) << "\n")) throw bcsr24::Error("cannot write " + o.json_path);
}

/// The block solver and its baselines (one GPU, or the CPU space).
int run_block(const Options& o, const Problem& problem, json& matrix_json) {
  std::vector<BlockRunReport> blocks;
  std::vector<PcgRunReport> baselines;
  std::vector<InnerBackend> backends;
  if (o.solver == "block") {
    if (o.compare)
      backends = {InnerBackend::bcsr24, InnerBackend::cusparse_csr_f32};
    else
      backends = {inner_backend_from_name(o.inner_backend)};
  }
  const bool baseline = o.solver == "pcg" || o.compare;
  std::printf("solving with %d right-hand sides (%s), tolerance %s (true fp64 residual)\n", problem.k,
              o.rhs_kind.c_str(), sci(o.tolerance, 1).c_str());
  for (InnerBackend backend : backends) {
    const BlockRunSettings settings = block_settings(o, backend);
    std::printf("\n== block solver: flexible block CG (fp64), %s preconditioner, products %s%s, memory %d\n",
                settings.chebyshev ? "Chebyshev" : "Jacobi", inner_backend_name(backend),
                backend == InnerBackend::bcsr24 ? (std::string(" ") + o.precision()).c_str() : "", o.block_memory);
    std::fflush(stdout);
    blocks.push_back(run_block_solver(problem, settings));
    print_block_report(blocks.back());
    if (!blocks.back().census.is_null() && !matrix_json.contains("bcsr24")) matrix_json["bcsr24"] = blocks.back().census;
    std::fflush(stdout);
  }
  if (baseline) {
    std::printf("\n== baseline: %d Jacobi-preconditioned CG solves in fp64, cuSPARSE CSR fp64 SpMM for all columns, "
                "status read every %d iterations\n",
                problem.k, o.check_every);
    std::fflush(stdout);
    baselines.push_back(
        run_pcg_baseline(problem, o.device, pcg_options(o), !o.no_timing, o.device == "gpu", o.verbose));
    print_pcg_report(baselines.back());
    std::fflush(stdout);
  }
  print_comparison(blocks, baselines);
  if (!o.json_path.empty()) {
    json runs = json::array();
    for (const BlockRunReport& r : blocks) runs.push_back(block_report_json(r));
    for (const PcgRunReport& r : baselines) runs.push_back(pcg_report_json(r));
    write_json(o, matrix_json, runs, {{"comparison", comparison_json(blocks, baselines)}});
  }
  bool converged = true;
  for (const BlockRunReport& r : blocks) converged = converged && r.result.stop == BlockStop::converged;
  for (const PcgRunReport& r : baselines) converged = converged && r.result.stop == BlockStop::converged;
  return converged ? 0 : kExitNotConverged;
}

/// The legacy solver: flexible CG with block CG inside, on one GPU, the CPU, or distributed.
int run_legacy(const Options& o, const Problem& problem, json& matrix_json, const bcsr24::ranks::Session* mpi) {
  std::printf("solving with %d right-hand sides (%s), tolerance %s; legacy solver: inner block CG %d products or "
              "relative residual %s, scaling %s, precision %s; outer memory %d, fallback %s\n",
              problem.k, o.rhs_kind.c_str(), sci(o.tolerance, 1).c_str(), o.inner_iters,
              sci(o.inner_tolerance, 1).c_str(), o.scaling().c_str(), o.precision().c_str(), o.memory,
              o.fallback.c_str());
  std::vector<InnerBackend> backends;
  if (o.compare)
    backends = {InnerBackend::bcsr24, InnerBackend::cusparse_csr_f32};
  else
    backends = {inner_backend_from_name(o.inner_backend)};
  if (o.device == "gpu") {
    // The first solve in a process pays for module loading and library handle creation (cuBLAS, cuSPARSE);
    // one short untimed solve per backend keeps that out of the figures compared below.
    std::printf("\n== warm-up (one outer iteration per backend, not reported)\n");
    Options warm = o;
    warm.max_outer = 1;
    warm.verbose = false;
    json scratch = matrix_json;
    for (InnerBackend backend : backends) run_legacy_backend(problem, backend, warm, false, scratch, mpi);
    std::fflush(stdout);
  }
  std::vector<RunReport> reports;
  for (std::size_t i = 0; i < backends.size(); ++i) {
    std::printf("\n== legacy solver, inner backend %s\n", inner_backend_name(backends[i]));
    std::fflush(stdout);
    reports.push_back(run_legacy_backend(problem, backends[i], o, i == 0, matrix_json, mpi));
    print_legacy_report(reports.back());
    std::fflush(stdout);
  }

  if (reports.size() == 2 && reports[0].timings && reports[1].timings) {
    const RunReport& b = reports[0];
    const RunReport& c = reports[1];
    std::printf("\n== comparison (same solver, inner products through bcsr24 vs cuSPARSE CSR fp32)\n");
    std::printf("%-18s %-11s %6s %8s %10s %9s %12s %8s\n", "inner backend", "stop", "outer", "inner", "residual",
                "solve s", "products s", "share");
    for (const RunReport* r : {&b, &c}) {
      const double total = r->solve_seconds;
      std::printf("%-18s %-11s %6d %8d %10s %9s %12s %7s%%\n", inner_backend_name(r->backend),
                  stop_reason_name(r->result.stop), r->result.outer_iterations, r->result.inner_products,
                  sci(r->result.max_final_relative_residual).c_str(), fixed(total).c_str(),
                  fixed(r->timings->inner_spmm_ms / 1e3).c_str(),
                  fixed(total > 0 ? 100.0 * r->timings->inner_spmm_ms / 1e3 / total : 0.0, 1).c_str());
    }
    const double per_b = b.timings->inner_products ? b.timings->inner_spmm_ms / double(b.timings->inner_products) : 0;
    const double per_c = c.timings->inner_products ? c.timings->inner_spmm_ms / double(c.timings->inner_products) : 0;
    std::printf("per inner product: bcsr24 %.4f ms vs cuSPARSE fp32 %.4f ms (%.2fx); solve time ratio %.2fx\n", per_b,
                per_c, per_b > 0 ? per_c / per_b : 0.0, b.solve_seconds > 0 ? c.solve_seconds / b.solve_seconds : 0.0);
  }

  if (!o.json_path.empty() && (!mpi || mpi->is_root())) {
    json runs = json::array();
    for (const RunReport& r : reports) runs.push_back(legacy_report_json(r));
    write_json(o, matrix_json, runs, json::object());
  }
  const bool all_converged = std::all_of(reports.begin(), reports.end(),
                                         [](const RunReport& r) { return r.result.stop == StopReason::converged; });
  return all_converged ? 0 : kExitNotConverged;
}

/// The whole program after parsing. `mpi`: this process's MPI session (--mpi), else null; under MPI every process
/// runs it on the same matrix (stdout of the others is silenced by the caller) and only the root writes the JSON.
int run(const Options& o, const bcsr24::ranks::Session* mpi) {
  const auto load_start = std::chrono::steady_clock::now();
  std::string name;
  json matrix_json;
  bcsr24::CsrMatrix a = load_matrix(o, name, matrix_json);
  const double load_seconds = seconds_since(load_start);
  std::printf("matrix %s: %d x %d, %lld nonzeros (%s s to %s)\n", name.c_str(), a.rows, a.cols,
              static_cast<long long>(a.nnz()), fixed(load_seconds, 2).c_str(), o.matrix_path.empty() ? "generate" : "read");
  if (!o.write_matrix.empty() && (!mpi || mpi->is_root())) {
    bcsr24::write_matrix_market(o.write_matrix, a);
    std::printf("wrote %s\n", o.write_matrix.c_str());
    if (o.write_only) return 0;
  }
  const SpdEvidence evidence = check_spd_evidence(a);
  std::printf("SPD evidence: %s%s\n", evidence.summary().c_str(),
              evidence.proves_spd() ? " => SPD" : " (SPD not proven; a breakdown would show it)");
  if (!evidence.square || !evidence.symmetric)
    throw bcsr24::InvalidArgument("the matrix is not symmetric: conjugate gradients need an SPD matrix");
  if (!evidence.positive_diagonal) throw bcsr24::InvalidArgument("the diagonal is not positive: the matrix is not SPD");
  matrix_json.update({{"name", name},
                      {"rows", a.rows},
                      {"nnz", a.nnz()},
                      {"symmetric", evidence.symmetric},
                      {"diagonally_dominant", evidence.diagonally_dominant},
                      {"min_dominance_ratio", evidence.min_dominance_ratio}});

  if (o.device == "gpu") {
    const bcsr24::DeviceInfo device = bcsr24::query_device();
    if (!device.available)
      throw bcsr24::NotSupported("no usable GPU (" + device.reason + "); --device cpu runs the same algorithm slowly");
    std::printf("device: %s (sm_%d, %d SMs)\n", device.name.c_str(), device.compute_capability, device.multiprocessors);
    matrix_json["device"] = device.name;
  } else {
    std::printf("device: CPU (bcsr24 products emulated with reference_spmm; timings are not comparable)\n");
    matrix_json["device"] = "cpu";
  }
  const Problem problem = make_problem(name, std::move(a), o.rhs, rhs_kind_from_name(o.rhs_kind), o.seed);
  if (o.check_spaces) {
    json check;
    const bool ok = check_spaces(problem, block_settings(o, inner_backend_from_name(o.inner_backend)), check);
    if (!o.json_path.empty()) write_json(o, matrix_json, json::array(), {{"space_check", check}});
    return ok ? 0 : kExitNotConverged;
  }
  if (o.legacy()) {
    if (o.solver == "block" && (o.gpus > 0 || mpi))
      std::printf("note: the distributed runs (--gpus, --mpi) use the legacy solver; the block solver runs on one GPU\n");
    return run_legacy(o, problem, matrix_json, mpi);
  }
  return run_block(o, problem, matrix_json);
}

int report_error(const std::string& message, const std::string& hint, int code) {
  std::fprintf(stderr, "%s: %s%s\n", kProgram, message.c_str(), hint.c_str());
  return code;
}

#if BCSR24_HAS_NCCL
/// --mpi: MPI_Init, one device per process, the run on every process, the root's exit status on all of them.
int run_mpi(const Options& o) {
  std::unique_ptr<bcsr24::ranks::Session> session;
  try {
    session = std::make_unique<bcsr24::ranks::Session>(bcsr24::ranks::Launch::mpi, 0);
  } catch (const std::exception& error) {
    return report_error(error.what(), "", kExitRuntimeError);
  }
  try {
    session->select_devices();
    // Every process runs the same program and would print the same report: only rank 0's stdout is kept.
    // Errors still reach stderr from every process.
    if (!session->is_root() && !std::freopen("/dev/null", "w", stdout))
      throw bcsr24::Error("cannot redirect stdout of a non-root rank to /dev/null");
    return session->agree_on_status(run(o, session.get()));
  } catch (const std::exception& error) {
    std::fflush(stdout);
    const int code = report_error(session->error_prefix() + std::string(error.what()), "", kExitRuntimeError);
    session->abort_all_if_mpi(code);  // the other processes may be waiting for this one in a collective
    return code;
  }
}
#endif

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"", kProgram};
  Options options;
  try {
    add_options(app, options);
    app.parse(argc, argv);
    validate(options);
  } catch (const CLI::Success& success) {
    return app.exit(success);
  } catch (const CLI::Error& error) {
    return report_error(error.what(), " (see --help)", kExitUsage);
  } catch (const UsageError& error) {
    return report_error(error.what(), " (see --help)", kExitUsage);
  }
#if BCSR24_HAS_NCCL
  if (options.mpi) return run_mpi(options);
#endif
  try {
    return run(options, nullptr);
  } catch (const std::exception& error) {
    std::fflush(stdout);
    return report_error(error.what(), "", kExitRuntimeError);
  }
}
