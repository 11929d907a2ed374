// bcsr24_solve: mixed-precision SPD solver for several right-hand sides. Outer flexible CG in fp64 (true
// residual with cuSPARSE CSR fp64), inner block CG in fp32 whose products run through bcsr24 (fp16 A) or,
// for comparison, cuSPARSE CSR fp32. Reports iterations, time, the share of time in the products, and why
// each run stopped.

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
#include "bcsr24/error.hpp"
#include "bcsr24/matrix_market.hpp"
#include "cpu_system.hpp"
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
  std::vector<std::int32_t> mesh;  ///< NX NY NZ when --generate-mesh is given
  std::int32_t dofs_per_node = 3;
  int stencil = 27;
  double diagonal_margin = 0.01;
  std::uint64_t mesh_seed = 1;
  int rhs = 8;
  std::string rhs_kind = "a_times_random";
  std::uint64_t seed = 1;
  double tolerance = 1e-10;
  int max_outer = 40000;
  int memory = 8;
  int inner_iters = 30;
  double inner_tolerance = 1e-2;
  std::string inner_backend = "bcsr24";
  bool compare = false;
  std::string inner_scaling = "none";
  std::string inner_precision = "fp16";
  std::string fallback = "jacobi";
  int stall_window = 5;
  double stall_factor = 0.5;
  int fallback_window = 4000;
  int replace_every = 50;
  std::string device = "gpu";
  int gpus = 0;  ///< 0: one GPU, the plain space; P >= 1: the distributed space on P GPUs
  bool mpi = false;  ///< the distributed space with one MPI process per GPU (mpirun -np P)
  std::string json_path;
  bool verbose = false;
};

void add_options(CLI::App& app, Options& o) {
  app.description(
      "Solve A X = B for SPD A and several right-hand sides to a relative residual tolerance (default 1e-10).\n"
      "Outer: flexible CG in fp64 with true residuals (cuSPARSE CSR fp64). Inner: block CG in fp32 whose products "
      "A*P run through bcsr24 (fp16 A on tensor cores) or cuSPARSE CSR fp32 (--inner-backend, --compare).\n"
      "Exit status: 0 every run converged, 1 error, 2 bad arguments, 3 a run stopped without converging "
      "(the report says why).");
  auto* matrix = app.add_option("--matrix", o.matrix_path, "Matrix Market file of an SPD matrix");
  auto* mesh = app.add_option("--generate-mesh", o.mesh,
                              "Generate a 3D mesh matrix with NX x NY x NZ nodes instead (diagonally dominant SPD)")
                   ->expected(3);
  matrix->excludes(mesh);
  app.add_option("--dofs-per-node", o.dofs_per_node, "Unknowns per mesh node")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--stencil", o.stencil, "Mesh stencil: 7 or 27 points")->capture_default_str()->check(CLI::IsMember({7, 27}));
  app.add_option("--diag-margin", o.diagonal_margin,
                 "Mesh diagonal = (1 + margin) * off-diagonal row sum; smaller = worse conditioned")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--mesh-seed", o.mesh_seed, "Seed of the mesh values")->capture_default_str();
  app.add_option("--rhs", o.rhs, "Number of right-hand sides k")->capture_default_str()->check(CLI::Range(1, 256));
  app.add_option("--rhs-kind", o.rhs_kind,
                 "a_times_random: B = A X_true with random X_true (the error is reported); random: random B")
      ->capture_default_str()
      ->check(CLI::IsMember({"a_times_random", "random"}));
  app.add_option("--seed", o.seed, "Seed of the right-hand sides")->capture_default_str();
  app.add_option("--tol", o.tolerance, "Target max_j |b_j - A x_j| / |b_j| (true fp64 residual)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--max-outer", o.max_outer, "Outer iteration limit")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--outer-memory", o.memory, "Previous directions each outer direction is orthogonalised against")
      ->capture_default_str()
      ->check(CLI::Range(1, kMaxMemory));
  app.add_option("--inner-iters", o.inner_iters, "Products (block CG iterations) per inner solve")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--inner-tol", o.inner_tolerance, "Inner solve stops early when every column's residual fell by this")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--inner-backend", o.inner_backend, "Products of the inner solve")
      ->capture_default_str()
      ->check(CLI::IsMember({"bcsr24", "cusparse_csr_f32"}));
  app.add_flag("--compare", o.compare, "Run both inner backends, bcsr24 then cusparse_csr_f32, and compare them");
  app.add_option("--inner-precision", o.inner_precision,
                 "Precision of bcsr24's inner products: fp16, bf16 or split (about fp32 accuracy); P goes in as fp32 "
                 "either way (no conversion pass)")
      ->capture_default_str()
      ->check(CLI::IsMember({"fp16", "bf16", "split"}));
  app.add_option("--inner-scaling", o.inner_scaling,
                 "jacobi: the inner solve works on D^-1/2 A D^-1/2 (fp16 sees a unit diagonal); none: on A, whose "
                 "fp16 range is left to bcsr24's scaling")
      ->capture_default_str()
      ->check(CLI::IsMember({"none", "jacobi"}));
  app.add_option("--fallback", o.fallback,
                 "When the inner solve stops helping: jacobi = continue with a Jacobi-preconditioned fp64 outer "
                 "iteration; none = stop and say so")
      ->capture_default_str()
      ->check(CLI::IsMember({"jacobi", "none"}));
  app.add_option("--stall-window", o.stall_window,
                 "Outer iterations over which the residual must fall by 1/stall-factor while the inner solve is used")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--stall-factor", o.stall_factor, "Required residual reduction factor per window")
      ->capture_default_str()
      ->check(CLI::Range(1e-300, 1.0));
  app.add_option("--fallback-window", o.fallback_window, "The same window in the Jacobi phase (stagnation)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--replace-every", o.replace_every,
                 "Recompute the true fp64 residual every this many outer iterations (0: only to confirm convergence)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--device", o.device, "gpu, or cpu (same algorithm, fp16 products emulated; small matrices only)")
      ->capture_default_str()
      ->check(CLI::IsMember({"gpu", "cpu"}));
  CLI::Option* gpus =
      app.add_option("--gpus", o.gpus,
                     "Distribute A, the vectors and every product by rows over GPUs 0..P-1 of this host (one thread "
                     "and NCCL rank each; halo exchange and NCCL all-reduce). 1 runs the distributed code on one GPU; "
                     "without the option the plain single-GPU space runs. Needs a build with NCCL")
          ->check(CLI::PositiveNumber);
  app.add_flag("--mpi", o.mpi,
               "The distributed solve with one MPI process per GPU (mpirun -np P): each process takes device "
               "local rank % device count of its host, reads or generates the whole matrix and keeps its rows; "
               "rank 0 prints. Needs a build with NCCL and MPI")
      ->excludes(gpus);
  app.add_option("--json", o.json_path, "Also write the results as JSON to this file");
  app.add_flag("--verbose", o.verbose, "Print every outer iteration");
}

void validate(const Options& o) {
  if (o.matrix_path.empty() && o.mesh.empty()) throw UsageError("give --matrix FILE or --generate-mesh NX NY NZ");
  for (std::int32_t v : o.mesh)
    if (v < 1) throw UsageError("--generate-mesh sizes must be >= 1");
  if (o.gpus > 0 && o.device != "gpu") throw UsageError("--gpus needs --device gpu");
  if (o.mpi && o.device != "gpu") throw UsageError("--mpi needs --device gpu");
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

json census_json(const bcsr24::SparseOperator& op) {
  const bcsr24::TileCensus& c = op.census();
  const bcsr24::Fp16Scaling& s = op.scaling();
  return {{"bcsr24_bytes", bcsr24_bytes(op)},
          {"csr_f32_bytes", csr_f32_bytes(op)},
          {"tile_rows", c.tile_rows},
          {"tile_cols", c.tile_cols},
          {"sparse24_tiles", c.sparse24_tiles},
          {"dense_tiles", c.dense_tiles},
          {"sparse24_share", c.sparse24_share()},
          {"nnz_per_tile", c.nnz_per_tile()},
          {"fp16_scale_exponent", s.exponent},
          {"max_abs", s.max_abs},
          {"min_abs_nonzero", s.min_abs_nonzero},
          {"overflow_count", s.overflow_count},
          {"underflow_count", s.underflow_count},
          {"subnormal_count", s.subnormal_count},
          {"flushed_count", s.flushed_count}};
}

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
  outer.stall_window = o.stall_window;
  outer.stall_factor = o.stall_factor;
  outer.fallback = o.fallback == "jacobi" ? Fallback::jacobi : Fallback::none;
  outer.fallback_window = o.fallback_window;
  outer.replace_every = o.replace_every;
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
RunReport run_backend(const Problem& problem, InnerBackend backend, const Options& o, bool first, json& matrix_json,
                      const bcsr24::ranks::Session* mpi) {
  RunReport report;
  report.backend = backend;
  const bool scaled = o.inner_scaling == "jacobi";
  bcsr24::OperatorOptions operator_options;
  operator_options.precision = bcsr24::precision_from_name(o.inner_precision);
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
    if (first || !matrix_json.contains("bcsr24")) matrix_json["bcsr24"] = census_json(*inner.op);
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

void print_report(const RunReport& r) {
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

json report_json(const RunReport& r) {
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
  json j = {{"backend", inner_backend_name(r.backend)},
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

/// The whole program after parsing. `mpi`: this process's MPI session (--mpi), else null; under MPI every process
/// runs it on the same matrix (stdout of the others is silenced by the caller) and only the root writes the JSON.
int run(const Options& o, const bcsr24::ranks::Session* mpi) {
  const auto load_start = std::chrono::steady_clock::now();
  std::string name;
  bcsr24::CsrMatrix a;
  json matrix_json;
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
    a = generate_mesh_matrix(spec);
    matrix_json["generator"] = {{"nodes", o.mesh}, {"dofs_per_node", spec.dofs_per_node}, {"stencil", spec.stencil},
                                {"diagonal_margin", spec.diagonal_margin}, {"seed", spec.seed}};
  } else {
    name = o.matrix_path.substr(o.matrix_path.find_last_of('/') + 1);
    a = bcsr24::read_matrix_market(o.matrix_path);
  }
  const double load_seconds = seconds_since(load_start);
  const SpdEvidence evidence = check_spd_evidence(a);
  std::printf("matrix %s: %d x %d, %lld nonzeros (%s s to %s)\n", name.c_str(), a.rows, a.cols,
              static_cast<long long>(a.nnz()), fixed(load_seconds, 2).c_str(), o.mesh.empty() ? "read" : "generate");
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
  } else {
    std::printf("device: CPU (fp16 products emulated with reference_spmm; timings are not comparable)\n");
  }
  const Problem problem = make_problem(name, std::move(a), o.rhs, rhs_kind_from_name(o.rhs_kind), o.seed);
  std::printf("solving with %d right-hand sides (%s), tolerance %s; inner: %d products or relative residual %s, "
              "scaling %s; outer memory %d, fallback %s\n",
              problem.k, o.rhs_kind.c_str(), sci(o.tolerance, 1).c_str(), o.inner_iters,
              sci(o.inner_tolerance, 1).c_str(), o.inner_scaling.c_str(), o.memory, o.fallback.c_str());

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
    for (InnerBackend backend : backends) run_backend(problem, backend, warm, false, scratch, mpi);
    std::fflush(stdout);
  }
  std::vector<RunReport> reports;
  for (std::size_t i = 0; i < backends.size(); ++i) {
    std::printf("\n== inner backend %s\n", inner_backend_name(backends[i]));
    std::fflush(stdout);
    reports.push_back(run_backend(problem, backends[i], o, i == 0, matrix_json, mpi));
    print_report(reports.back());
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
    for (const RunReport& r : reports) runs.push_back(report_json(r));
    const json out = {{"program", kProgram},
                      {"matrix", matrix_json},
                      {"settings",
                       {{"rhs", o.rhs},
                        {"rhs_kind", o.rhs_kind},
                        {"seed", o.seed},
                        {"tolerance", o.tolerance},
                        {"max_outer", o.max_outer},
                        {"outer_memory", o.memory},
                        {"inner_iters", o.inner_iters},
                        {"inner_tolerance", o.inner_tolerance},
                        {"inner_scaling", o.inner_scaling},
                        {"inner_precision", o.inner_precision},
                        {"fallback", o.fallback},
                        {"replace_every", o.replace_every},
                        {"device", o.device},
                        {"gpus", o.gpus},
                        {"mpi", o.mpi}}},
                      {"runs", runs}};
    std::ofstream file(o.json_path);
    if (!(file << out.dump(2) << "\n")) throw bcsr24::Error("cannot write " + o.json_path);
  }
  const bool all_converged = std::all_of(reports.begin(), reports.end(),
                                         [](const RunReport& r) { return r.result.stop == StopReason::converged; });
  return all_converged ? 0 : kExitNotConverged;
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
