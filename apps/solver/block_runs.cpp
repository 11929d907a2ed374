// Runs of the block solver and of the Jacobi-PCG baseline (block_runs.hpp).
#include "block_runs.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <utility>

#include "bcsr24/solvers.hpp"
#include "block_reports.hpp"
#include "cuda_resources.hpp"
#include "cusparse_support.hpp"
#include "solve_json.hpp"
#include "solve_text.hpp"
#include "solver_access.hpp"

namespace bcsr24::solver {

using json = nlohmann::json;

namespace {

/// The run's space (GPU or CPU) with B in its slot: the time that took is the run's upload time. On the GPU also
/// the device time of the operations, which the warm-up run must not count.
struct RunSpace {
  std::unique_ptr<BlockSpace> space;
  GpuBlockSpace* gpu = nullptr;
  double upload_seconds = 0.0;

  RunSpace(const std::string& device, const Problem& problem, const InnerMatrix& inner, int memory, int lanczos_steps,
           BRounding rounding, bool timing, OuterProduct outer) {
    const auto start = std::chrono::steady_clock::now();
    if (device == "gpu") {
      auto on_gpu =
          std::make_unique<GpuBlockSpace>(problem.a, inner, problem.k, memory, lanczos_steps, timing, outer,
                                          cusparse_products());
      gpu = on_gpu.get();
      space = std::move(on_gpu);
    } else {
      space = std::make_unique<CpuBlockSpace>(problem.a, inner, problem.k, memory, lanczos_steps, rounding);
    }
    space->set_slot(BlockSlots::b, problem.b);
    upload_seconds = seconds_since(start);
  }
  std::int64_t device_bytes() const { return gpu ? gpu->device_bytes() : 0; }
  /// After the untimed warm-up run: its operations do not count.
  void forget_warm_up() {
    if (gpu) gpu->reset_timings();
  }
  /// The device time per kind of operation since (GPU only), once the device is idle.
  std::optional<BlockTimings> timings() {
    if (!gpu) return std::nullopt;
    gpu->synchronize();
    return gpu->timings();
  }
};

}  // namespace

void configure_solver(solvers::SpdSolver& solver, const BlockRunSettings& settings, bool print_iterations) {
  solvers::detail::EngineSettings& engine = solvers::detail::SolverAccess::settings(solver);
  engine.backend = settings.backend;
  engine.outer_product = settings.outer_product;
  engine.cpu_rounding = settings.cpu_rounding;
  engine.jacobi_scaling = settings.jacobi_scaling;
  engine.timing = settings.timing && settings.device == "gpu";
  engine.warm_up = settings.warm_up;
  engine.fcg = settings.fcg;
  engine.polynomial = settings.polynomial;
  engine.foreign = cusparse_products();  // the comparison backend's products (--compare, --inner-backend)
  if (settings.verbose && print_iterations)
    engine.observer = [](const BlockIterationRecord& r) {
      std::printf("  iteration %4d: max relative residual %s, %d active, %d directions (%d deflated)%s, %.3f s\n",
                  r.iteration, sci(r.max_relative).c_str(), r.active, r.directions, r.deflated,
                  r.chebyshev ? "" : " [Jacobi]", r.seconds);
      std::fflush(stdout);
    };
}

solvers::SolveOptions solve_options(const BlockRunSettings& settings) {
  solvers::SolveOptions options;
  options.rtol = settings.fcg.tolerance;
  options.max_iterations = settings.fcg.max_iterations;
  options.time_limit_seconds = settings.fcg.time_limit_seconds;
  options.preconditioner = settings.chebyshev ? solvers::Preconditioner::chebyshev : solvers::Preconditioner::jacobi;
  options.chebyshev_degree = settings.polynomial.degree;
  options.inner_precision = settings.precision;
  return options;
}

void fill_block_report(BlockRunReport& report, const solvers::SpdSolver& solver, const solvers::SolveReport& solved,
                       const Problem& problem, const std::vector<double>& x) {
  const BlockRunSettings& settings = report.settings;
  const solvers::detail::LastSolve& last = solvers::detail::SolverAccess::last(solver);
  report.result = last.result;
  report.chebyshev = last.chebyshev;
  report.preprocess_seconds = last.preprocess_seconds;
  report.upload_seconds = last.upload_seconds;
  report.lanczos_seconds = last.lanczos_seconds;
  report.iterate_seconds = last.iterate_seconds;
  report.solve_seconds = solved.seconds;
  report.lanczos_products = last.lanczos_products;
  report.timings = last.timings;
  report.plan = last.plan;
  report.device_bytes = last.device_bytes;
  if (last.inner && last.inner->op) report.census = operator_census_json(*last.inner->op);
  if (settings.verbose && report.chebyshev) {
    std::printf("chebyshev: %s\n", report.chebyshev->reason.c_str());
    if (!report.plan.empty()) std::printf("bcsr24 plan: %s\n", report.plan.c_str());
    std::fflush(stdout);
  }
  if (!x.empty()) report.host = check_on_host(problem, x);
}

std::string block_label(const BlockRunSettings& s) {
  std::string label = "block";
  label += s.chebyshev ? " Chebyshev" : " Jacobi";
  label += s.backend == InnerBackend::bcsr24 ? std::string(", bcsr24 ") + precision_name(s.precision)
                                             : std::string(", cuSPARSE fp32");
  return label;
}

BlockRunReport run_block_solver(const Problem& problem, const BlockRunSettings& settings) {
  BlockRunReport report;
  report.settings = settings;
  report.label = block_label(settings);
  // The run goes through the library's public solver; the comparison backend, the tuning knobs and the whole record
  // of the solve come through the solvers library's own access (lib/solvers/solver_access.hpp).
  solvers::SpdSolver solver(problem.a);
  configure_solver(solver, settings, true);
  const solvers::SolveOptions options = solve_options(settings);

  const int k = problem.k;
  std::vector<double> x(problem.b.size());
  solvers::SolveReport solved;
  if (settings.device == "gpu") {
    const std::size_t bytes = x.size() * sizeof(double);
    bench::DeviceBuffer b(bytes), x_device(bytes);
    bench::check_cuda(cudaMemcpy(b.get(), problem.b.data(), bytes, cudaMemcpyHostToDevice), "cudaMemcpy", __FILE__,
                      __LINE__);
    solved = solver.solve(static_cast<const double*>(b.get()), k, static_cast<double*>(x_device.get()), k, k, options);
    bench::check_cuda(cudaMemcpy(x.data(), x_device.get(), bytes, cudaMemcpyDeviceToHost), "cudaMemcpy", __FILE__,
                      __LINE__);
  } else {
    solved = solver.solve_host(problem.b.data(), k, x.data(), k, k, options);
  }
  fill_block_report(report, solver, solved, problem, x);
  return report;
}

PcgRunReport run_pcg_baseline(const Problem& problem, const std::string& device, const PcgOptions& options,
                              bool timing, bool warm_up, bool verbose) {
  PcgRunReport report;
  report.device = device;
  report.options = options;
  // The baseline needs no inner operator; the space's fp32 product is left on A itself and never run.
  InnerMatrix unused;
  unused.backend = InnerBackend::cusparse_csr_f32;
  // Its fp64 products are cuSPARSE's: the standard practice this baseline stands for.
  RunSpace run_space(device, problem, unused, 1, 2, BRounding::exact, timing, OuterProduct::cusparse);
  BlockSpace& space = *run_space.space;
  report.upload_seconds = run_space.upload_seconds;
  report.device_bytes = run_space.device_bytes();
  if (warm_up) {
    PcgOptions warm = options;
    warm.max_iterations = 1;
    warm.time_limit_seconds = 0.0;
    jacobi_pcg(space, warm);
    run_space.forget_warm_up();
  }
  PcgObserver observer;
  if (verbose)
    observer = [](const PcgCheck& c) {
      std::printf("  iteration %6d: max relative residual %s, %d active%s, %.3f s\n", c.iteration,
                  sci(c.max_relative).c_str(), c.active, c.true_residual ? " (true residual)" : "", c.seconds);
      std::fflush(stdout);
    };
  const auto start = std::chrono::steady_clock::now();
  report.result = jacobi_pcg(space, options, observer);
  report.solve_seconds = seconds_since(start);
  report.timings = run_space.timings();
  report.host = check_on_host(problem, space.slot(BlockSlots::x));
  return report;
}

}  // namespace bcsr24::solver
