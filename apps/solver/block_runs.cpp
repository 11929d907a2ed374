// Runs of the block solver and of the Jacobi-PCG baseline (block_runs.hpp).
#include "block_runs.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <utility>

#include "block_reports.hpp"
#include "solve_json.hpp"
#include "solve_text.hpp"

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
          std::make_unique<GpuBlockSpace>(problem.a, inner, problem.k, memory, lanczos_steps, timing, outer);
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

/// Relative rounding of the inner matrix's stored values, for the Gershgorin bound of what is multiplied.
double stored_relative_error(InnerBackend backend, Precision precision) {
  if (backend == InnerBackend::cusparse_csr_f32) return 1e-6;
  switch (precision) {
    case Precision::fp16: return 1e-3;
    case Precision::bf16: return 8e-3;
    case Precision::split: return 1e-6;
  }
  return 1e-2;
}

std::string block_label(const BlockRunSettings& s) {
  std::string label = "block";
  label += s.chebyshev ? " Chebyshev" : " Jacobi";
  label += s.backend == InnerBackend::bcsr24 ? std::string(", bcsr24 ") + precision_name(s.precision)
                                             : std::string(", cuSPARSE fp32");
  return label;
}

}  // namespace

BlockRunReport run_block_solver(const Problem& problem, const BlockRunSettings& settings) {
  BlockRunReport report;
  report.settings = settings;
  report.label = block_label(settings);
  OperatorOptions operator_options;
  operator_options.precision = settings.precision;
  const InnerMatrix inner =
      prepare_inner_matrix(problem.a, settings.backend, settings.jacobi_scaling, operator_options);
  report.preprocess_seconds = inner.preprocess_seconds;
  if (inner.op) report.census = operator_census_json(*inner.op);
  const int lanczos_steps = std::max(2, settings.polynomial.lanczos_steps);

  RunSpace run_space(settings.device, problem, inner, settings.fcg.memory, lanczos_steps, settings.cpu_rounding,
                     settings.timing, settings.outer_product);
  BlockSpace& space = *run_space.space;
  report.upload_seconds = run_space.upload_seconds;
  report.device_bytes = run_space.device_bytes();
  if (run_space.gpu) report.plan = run_space.gpu->plan_summary();
  const double gershgorin = gershgorin_bound(problem.a, inner.row_scale,
                                             stored_relative_error(settings.backend, settings.precision));
  if (settings.warm_up) {
    // The first products and kernels of a process pay for module loading and library setup: one short untimed
    // run on the same space keeps that out of the figures.
    BlockFcgOptions warm = settings.fcg;
    warm.max_iterations = 1;
    warm.time_limit_seconds = 0.0;
    if (settings.chebyshev) {
      ChebyshevOptions quick = settings.polynomial;
      quick.lanczos_steps = 2;
      const ChebyshevChoice choice = choose_chebyshev(run_lanczos(space, 2, quick.seed), gershgorin, quick);
      block_fcg(space, &choice.polynomial, warm);
    } else {
      block_fcg(space, nullptr, warm);
    }
    run_space.forget_warm_up();
  }

  BlockObserver observer;
  if (settings.verbose)
    observer = [](const BlockIterationRecord& r) {
      std::printf("  iteration %4d: max relative residual %s, %d active, %d directions (%d deflated)%s, %.3f s\n",
                  r.iteration, sci(r.max_relative).c_str(), r.active, r.directions, r.deflated,
                  r.chebyshev ? "" : " [Jacobi]", r.seconds);
      std::fflush(stdout);
    };
  const SpaceCounters before = space.counters();
  const auto start = std::chrono::steady_clock::now();
  if (settings.chebyshev) {
    const LanczosEstimate estimate = run_lanczos(space, lanczos_steps, settings.polynomial.seed);
    report.chebyshev = choose_chebyshev(estimate, gershgorin, settings.polynomial);
    report.lanczos_seconds = seconds_since(start);
    if (settings.verbose) {
      std::printf("chebyshev (chosen before the iterations): %s\n", report.chebyshev->reason.c_str());
      if (!report.plan.empty()) std::printf("bcsr24 plan: %s\n", report.plan.c_str());
      std::fflush(stdout);
    }
    report.lanczos_products = space.counters().inner_products - before.inner_products;
  }
  report.result =
      block_fcg(space, report.chebyshev ? &report.chebyshev->polynomial : nullptr, settings.fcg, observer);
  report.solve_seconds = seconds_since(start);
  report.iterate_seconds = report.solve_seconds - report.lanczos_seconds;
  report.timings = run_space.timings();
  report.host = check_on_host(problem, space.slot(BlockSlots::x));
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
