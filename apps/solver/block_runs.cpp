// Runs and reports of the block solver and the Jacobi-PCG baseline, and the GPU-against-CPU check of the spaces.
#include "block_runs.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <random>

#include "bcsr24/error.hpp"
#include "bcsr24/sparse_operator.hpp"

namespace bcsr24::solver {

using json = nlohmann::json;

namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
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

std::unique_ptr<BlockSpace> make_space(const std::string& device, const CsrMatrix& a, const InnerMatrix& inner, int k,
                                       int memory, int lanczos_steps, BRounding rounding, bool timing) {
  if (device == "gpu") return std::make_unique<GpuBlockSpace>(a, inner, k, memory, lanczos_steps, timing);
  return std::make_unique<CpuBlockSpace>(a, inner, k, memory, lanczos_steps, rounding);
}

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

json timings_json(const BlockTimings& t, double solve_seconds, std::int64_t inner_products,
                  std::int64_t outer_products) {
  const double solve_ms = solve_seconds * 1e3;
  const auto share = [&](double ms) { return solve_ms > 0 ? ms / solve_ms : 0.0; };
  return {{"inner_product_seconds", t.inner_product_ms / 1e3},
          {"outer_product_seconds", t.outer_product_ms / 1e3},
          {"vector_seconds", t.vector_ms / 1e3},
          {"block_algebra_seconds", t.block_ms / 1e3},
          {"other_seconds", std::max(0.0, solve_seconds - t.total_ms() / 1e3)},
          {"inner_product_share", share(t.inner_product_ms)},
          {"product_share", share(t.inner_product_ms + t.outer_product_ms)},
          {"vector_share", share(t.vector_ms)},
          {"block_algebra_share", share(t.block_ms)},
          {"other_share", std::max(0.0, 1.0 - share(t.total_ms()))},
          {"ms_per_inner_product", inner_products > 0 ? t.inner_product_ms / double(inner_products) : 0.0},
          {"ms_per_outer_product", outer_products > 0 ? t.outer_product_ms / double(outer_products) : 0.0}};
}

void print_timings(const BlockTimings& t, double solve_seconds, std::int64_t inner_products,
                   std::int64_t outer_products, const char* inner_name) {
  const double solve_ms = solve_seconds * 1e3;
  const auto pct = [&](double ms) { return fixed(solve_ms > 0 ? 100.0 * ms / solve_ms : 0.0, 1) + "%"; };
  const double other = std::max(0.0, solve_ms - t.total_ms());
  std::printf("device time: %s products %s s (%s, %.4f ms each); outer fp64 products %s s (%s, %.4f ms each); "
              "products together %s; vector kernels %s s (%s); block algebra %s s (%s); other (host synchronisation, "
              "launch gaps) %s s (%s)\n",
              inner_name, fixed(t.inner_product_ms / 1e3).c_str(), pct(t.inner_product_ms).c_str(),
              inner_products > 0 ? t.inner_product_ms / double(inner_products) : 0.0,
              fixed(t.outer_product_ms / 1e3).c_str(), pct(t.outer_product_ms).c_str(),
              outer_products > 0 ? t.outer_product_ms / double(outer_products) : 0.0,
              pct(t.inner_product_ms + t.outer_product_ms).c_str(), fixed(t.vector_ms / 1e3).c_str(),
              pct(t.vector_ms).c_str(), fixed(t.block_ms / 1e3).c_str(), pct(t.block_ms).c_str(),
              fixed(other / 1e3).c_str(), pct(other).c_str());
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

  const auto upload_start = std::chrono::steady_clock::now();
  std::unique_ptr<BlockSpace> space = make_space(settings.device, problem.a, inner, problem.k, settings.fcg.memory,
                                                 lanczos_steps, settings.cpu_rounding, settings.timing);
  space->set_slot(BlockSlots::b, problem.b);
  report.upload_seconds = seconds_since(upload_start);
  auto* gpu = dynamic_cast<GpuBlockSpace*>(space.get());
  if (gpu) {
    report.plan = gpu->plan_summary();
    report.device_bytes = gpu->device_bytes();
  }
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
      const ChebyshevChoice choice = choose_chebyshev(run_lanczos(*space, 2, quick.seed), gershgorin, quick);
      block_fcg(*space, &choice.polynomial, warm);
    } else {
      block_fcg(*space, nullptr, warm);
    }
    if (gpu) gpu->reset_timings();
  }

  BlockObserver observer;
  if (settings.verbose)
    observer = [](const BlockIterationRecord& r) {
      std::printf("  iteration %4d: max relative residual %s, %d active, %d directions (%d deflated)%s, %.3f s\n",
                  r.iteration, sci(r.max_relative).c_str(), r.active, r.directions, r.deflated,
                  r.chebyshev ? "" : " [Jacobi]", r.seconds);
      std::fflush(stdout);
    };
  const SpaceCounters before = space->counters();
  const auto start = std::chrono::steady_clock::now();
  if (settings.chebyshev) {
    const LanczosEstimate estimate = run_lanczos(*space, lanczos_steps, settings.polynomial.seed);
    report.chebyshev = choose_chebyshev(estimate, gershgorin, settings.polynomial);
    report.lanczos_seconds = seconds_since(start);
    if (settings.verbose) {
      std::printf("chebyshev (chosen before the iterations): %s\n", report.chebyshev->reason.c_str());
      if (!report.plan.empty()) std::printf("bcsr24 plan: %s\n", report.plan.c_str());
      std::fflush(stdout);
    }
    report.lanczos_products = space->counters().inner_products - before.inner_products;
  }
  report.result =
      block_fcg(*space, report.chebyshev ? &report.chebyshev->polynomial : nullptr, settings.fcg, observer);
  report.solve_seconds = seconds_since(start);
  report.iterate_seconds = report.solve_seconds - report.lanczos_seconds;
  if (gpu) {
    gpu->synchronize();
    report.timings = gpu->timings();
  }
  const std::vector<double> x = space->slot(BlockSlots::x);
  report.host_residual = max_relative_residual_host(problem.a, x, problem.b, problem.k);
  if (!problem.x_true.empty()) report.error = max_relative_error(x, problem.x_true, problem.k);
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
  const auto upload_start = std::chrono::steady_clock::now();
  std::unique_ptr<BlockSpace> space =
      make_space(device, problem.a, unused, problem.k, 1, 2, BRounding::exact, timing);
  space->set_slot(BlockSlots::b, problem.b);
  report.upload_seconds = seconds_since(upload_start);
  auto* gpu = dynamic_cast<GpuBlockSpace*>(space.get());
  if (gpu) report.device_bytes = gpu->device_bytes();
  if (warm_up) {
    PcgOptions warm = options;
    warm.max_iterations = 1;
    warm.time_limit_seconds = 0.0;
    jacobi_pcg(*space, warm);
    if (gpu) gpu->reset_timings();
  }
  PcgObserver observer;
  if (verbose)
    observer = [](const PcgCheck& c) {
      std::printf("  iteration %6d: max relative residual %s, %d active%s, %.3f s\n", c.iteration,
                  sci(c.max_relative).c_str(), c.active, c.true_residual ? " (true residual)" : "", c.seconds);
      std::fflush(stdout);
    };
  const auto start = std::chrono::steady_clock::now();
  report.result = jacobi_pcg(*space, options, observer);
  report.solve_seconds = seconds_since(start);
  if (gpu) {
    gpu->synchronize();
    report.timings = gpu->timings();
  }
  const std::vector<double> x = space->slot(BlockSlots::x);
  report.host_residual = max_relative_residual_host(problem.a, x, problem.b, problem.k);
  if (!problem.x_true.empty()) report.error = max_relative_error(x, problem.x_true, problem.k);
  return report;
}

json operator_census_json(const SparseOperator& op) {
  const TileCensus& c = op.census();
  const Fp16Scaling& s = op.scaling();
  return {{"bcsr24_bytes", double(c.sparse24_bytes + c.dense_bytes)},
          {"csr_f32_bytes", double(op.nnz()) * 8.0 + (op.rows() + 1.0) * 4.0},
          {"precision", precision_name(op.precision())},
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

void print_block_report(const BlockRunReport& r) {
  const BlockFcgResult& res = r.result;
  std::printf("%s\n", res.message.c_str());
  if (res.fallback_iteration >= 0)
    std::printf("fallback at iteration %d: %s\n", res.fallback_iteration, res.fallback_reason.c_str());
  if (r.chebyshev) std::printf("chebyshev: %s\n", r.chebyshev->reason.c_str());
  if (!r.plan.empty()) std::printf("bcsr24 plan: %s\n", r.plan.c_str());
  std::printf("iterations %d (%d with Jacobi), directions deflated %lld; products: inner %lld (+ %lld Lanczos), outer "
              "fp64 %lld\n",
              res.iterations, res.jacobi_iterations, static_cast<long long>(res.deflated),
              static_cast<long long>(res.inner_products), static_cast<long long>(r.lanczos_products),
              static_cast<long long>(res.outer_products));
  std::printf("max true relative residual %s (host fp64 check %s)", sci(res.max_final_relative).c_str(),
              sci(r.host_residual).c_str());
  if (r.error >= 0.0) std::printf(", max relative error vs X_true %s", sci(r.error).c_str());
  std::printf("\n");
  std::printf("time to solution %s s = Lanczos %s s + iterations %s s (%s ms per iteration)\n",
              fixed(r.solve_seconds).c_str(), fixed(r.lanczos_seconds).c_str(), fixed(r.iterate_seconds).c_str(),
              fixed(res.iterations > 0 ? 1e3 * r.iterate_seconds / res.iterations : 0.0).c_str());
  if (r.timings)
    print_timings(*r.timings, r.solve_seconds, res.inner_products + r.lanczos_products, res.outer_products,
                  r.settings.backend == InnerBackend::bcsr24 ? "bcsr24" : "cuSPARSE fp32");
  std::printf("host synchronisations: %lld during %d iterations (%s per iteration)\n",
              static_cast<long long>(res.synchronizations), res.iterations,
              fixed(res.iterations > 0 ? double(res.synchronizations) / res.iterations : 0.0, 2).c_str());
  std::printf("setup (not in the time to solution): inner matrix preparation %s s (host), space construction and "
              "upload %s s; device memory %.1f MiB\n",
              fixed(r.preprocess_seconds).c_str(), fixed(r.upload_seconds).c_str(),
              double(r.device_bytes) / 1048576.0);
}

void print_pcg_report(const PcgRunReport& r) {
  const PcgResult& res = r.result;
  std::printf("%s\n", res.message.c_str());
  std::printf("iterations %d (all columns converged at the status read after iteration %d; status read every %d), "
              "restarts %d, products %lld\n",
              res.iterations, res.converged_iteration, r.options.check_every, res.restarts,
              static_cast<long long>(res.products));
  std::printf("max true relative residual %s (host fp64 check %s)", sci(res.max_final_relative).c_str(),
              sci(r.host_residual).c_str());
  if (r.error >= 0.0) std::printf(", max relative error vs X_true %s", sci(r.error).c_str());
  std::printf("\n");
  std::printf("time to solution %s s (%s ms per iteration)\n", fixed(r.solve_seconds).c_str(),
              fixed(res.iterations > 0 ? 1e3 * r.solve_seconds / res.iterations : 0.0).c_str());
  if (r.timings) print_timings(*r.timings, r.solve_seconds, 0, res.products, "inner");
  std::printf("host synchronisations: %lld during %d iterations\n", static_cast<long long>(res.synchronizations),
              res.iterations);
}

json block_report_json(const BlockRunReport& r) {
  const BlockFcgResult& res = r.result;
  json history = json::array();
  for (const BlockIterationRecord& h : res.history)
    history.push_back({{"iteration", h.iteration},
                       {"max_relative_residual", h.max_relative},
                       {"active", h.active},
                       {"directions", h.directions},
                       {"deflated", h.deflated},
                       {"chebyshev", h.chebyshev},
                       {"true_residual", h.true_residual},
                       {"seconds", h.seconds},
                       {"relative_residual_per_column", h.relative}});
  json j = {{"solver", "block"},
            {"label", r.label},
            {"device", r.settings.device},
            {"backend", inner_backend_name(r.settings.backend)},
            {"precision", r.settings.backend == InnerBackend::bcsr24 ? precision_name(r.settings.precision) : "fp32"},
            {"preconditioner", r.settings.chebyshev ? "chebyshev" : "jacobi"},
            {"jacobi_scaling", r.settings.jacobi_scaling},
            {"memory", r.settings.fcg.memory},
            {"tolerance", r.settings.fcg.tolerance},
            {"stop", block_stop_name(res.stop)},
            {"message", res.message},
            {"fallback_iteration", res.fallback_iteration},
            {"fallback_reason", res.fallback_reason},
            {"iterations", res.iterations},
            {"jacobi_iterations", res.jacobi_iterations},
            {"deflated", res.deflated},
            {"inner_products", res.inner_products},
            {"lanczos_products", r.lanczos_products},
            {"outer_products", res.outer_products},
            {"synchronizations", res.synchronizations},
            {"synchronizations_per_iteration",
             res.iterations > 0 ? double(res.synchronizations) / res.iterations : 0.0},
            {"max_relative_residual", res.max_final_relative},
            {"host_check_relative_residual", r.host_residual},
            {"initial_relative_residual_per_column", res.initial_relative},
            {"relative_residual_per_column", res.final_relative},
            {"solve_seconds", r.solve_seconds},
            {"lanczos_seconds", r.lanczos_seconds},
            {"iterate_seconds", r.iterate_seconds},
            {"preprocess_seconds", r.preprocess_seconds},
            {"upload_seconds", r.upload_seconds},
            {"device_bytes", r.device_bytes},
            {"plan", r.plan},
            {"history", history}};
  if (r.error >= 0.0) j["max_relative_error"] = r.error;
  if (!r.census.is_null()) j["bcsr24"] = r.census;
  if (r.chebyshev) {
    const ChebyshevChoice& c = *r.chebyshev;
    j["chebyshev"] = {{"degree", c.polynomial.degree},
                      {"products_per_application", c.polynomial.degree - 1},
                      {"a", c.polynomial.a},
                      {"b", c.polynomial.b},
                      {"ratio", c.polynomial.b / c.polynomial.a},
                      {"lanczos_steps", c.estimate.steps},
                      {"lanczos_columns", c.estimate.columns},
                      {"lanczos_shortest", c.estimate.shortest},
                      {"theta_min", c.estimate.theta_min},
                      {"theta_max", c.estimate.theta_max},
                      {"residual_bound", c.estimate.residual_bound},
                      {"gershgorin", c.gershgorin},
                      {"reason", c.reason}};
  }
  if (r.timings)
    j["gpu"] = timings_json(*r.timings, r.solve_seconds, res.inner_products + r.lanczos_products, res.outer_products);
  return j;
}

json pcg_report_json(const PcgRunReport& r) {
  const PcgResult& res = r.result;
  json history = json::array();
  for (const PcgCheck& h : res.history)
    history.push_back({{"iteration", h.iteration},
                       {"max_relative_residual", h.max_relative},
                       {"active", h.active},
                       {"true_residual", h.true_residual},
                       {"seconds", h.seconds}});
  json j = {{"solver", "jacobi_pcg"},
            {"label", r.label},
            {"device", r.device},
            {"tolerance", r.options.tolerance},
            {"check_every", r.options.check_every},
            {"stop", block_stop_name(res.stop)},
            {"message", res.message},
            {"iterations", res.iterations},
            {"converged_iteration", res.converged_iteration},
            {"restarts", res.restarts},
            {"outer_products", res.products},
            {"synchronizations", res.synchronizations},
            {"max_relative_residual", res.max_final_relative},
            {"host_check_relative_residual", r.host_residual},
            {"relative_residual_per_column", res.final_relative},
            {"solve_seconds", r.solve_seconds},
            {"upload_seconds", r.upload_seconds},
            {"device_bytes", r.device_bytes},
            {"history", history}};
  if (r.error >= 0.0) j["max_relative_error"] = r.error;
  if (r.timings) j["gpu"] = timings_json(*r.timings, r.solve_seconds, 0, res.products);
  return j;
}

void print_comparison(const std::vector<BlockRunReport>& blocks, const std::vector<PcgRunReport>& baselines) {
  if (blocks.empty() || blocks.size() + baselines.size() < 2) return;
  std::printf("\n== comparison (time to solution; products = share of it in sparse products)\n");
  std::printf("%-32s %-14s %6s %9s %10s %9s %9s %8s\n", "run", "stop", "iter", "products", "residual", "solve s",
              "products", "/ first");
  const double reference = blocks.front().solve_seconds;
  for (const BlockRunReport& r : blocks) {
    const double share =
        r.timings ? (r.timings->inner_product_ms + r.timings->outer_product_ms) / (r.solve_seconds * 1e3) : 0.0;
    std::printf("%-32s %-14s %6d %9lld %10s %9s %8s%% %7sx\n", r.label.c_str(), block_stop_name(r.result.stop),
                r.result.iterations,
                static_cast<long long>(r.result.inner_products + r.lanczos_products + r.result.outer_products),
                sci(r.host_residual).c_str(), fixed(r.solve_seconds).c_str(), fixed(100.0 * share, 1).c_str(),
                fixed(reference > 0 ? r.solve_seconds / reference : 0.0, 2).c_str());
  }
  for (const PcgRunReport& r : baselines) {
    const double share = r.timings ? r.timings->outer_product_ms / (r.solve_seconds * 1e3) : 0.0;
    std::printf("%-32s %-14s %6d %9lld %10s %9s %8s%% %7sx\n", r.label.c_str(), block_stop_name(r.result.stop),
                r.result.iterations, static_cast<long long>(r.result.products), sci(r.host_residual).c_str(),
                fixed(r.solve_seconds).c_str(), fixed(100.0 * share, 1).c_str(),
                fixed(reference > 0 ? r.solve_seconds / reference : 0.0, 2).c_str());
  }
  std::printf("(products: share of the time to solution in sparse products, inner and fp64; / first: time to solution "
              "over the first run's)\n");
  for (std::size_t i = 1; i < blocks.size(); ++i)
    std::printf("speedup of %s over %s: %sx%s\n", blocks.front().label.c_str(), blocks[i].label.c_str(),
                fixed(reference > 0 ? blocks[i].solve_seconds / reference : 0.0, 2).c_str(),
                blocks[i].result.stop == BlockStop::converged ? "" : " (that run did not converge)");
  for (const PcgRunReport& r : baselines)
    std::printf("speedup of %s over %s: %sx%s\n", blocks.front().label.c_str(), r.label.c_str(),
                fixed(reference > 0 ? r.solve_seconds / reference : 0.0, 2).c_str(),
                r.result.stop == BlockStop::converged ? "" : " (that run did not converge)");
}

json comparison_json(const std::vector<BlockRunReport>& blocks, const std::vector<PcgRunReport>& baselines) {
  json j = json::object();
  if (blocks.empty()) return j;
  const BlockRunReport& first = blocks.front();
  j["reference"] = first.label;
  j["reference_converged"] = first.result.stop == BlockStop::converged;
  json others = json::array();
  for (std::size_t i = 1; i < blocks.size(); ++i)
    others.push_back({{"label", blocks[i].label},
                      {"converged", blocks[i].result.stop == BlockStop::converged},
                      {"speedup", first.solve_seconds > 0 ? blocks[i].solve_seconds / first.solve_seconds : 0.0}});
  for (const PcgRunReport& r : baselines)
    others.push_back({{"label", r.label},
                      {"converged", r.result.stop == BlockStop::converged},
                      {"speedup", first.solve_seconds > 0 ? r.solve_seconds / first.solve_seconds : 0.0}});
  j["speedups"] = others;
  return j;
}

// ---------------------------------------------------------------------------------------------------------------
// GPU against CPU.

namespace {

/// Largest |a - b| over max(|b|) (a relative difference that ignores entries near zero).
double relative_difference(const std::vector<double>& a, const std::vector<double>& b) {
  double diff = 0.0, scale = 0.0;
  for (std::size_t i = 0; i < a.size() && i < b.size(); ++i) {
    diff = std::max(diff, std::fabs(a[i] - b[i]));
    scale = std::max(scale, std::fabs(b[i]));
  }
  if (a.size() != b.size()) return HUGE_VAL;
  return scale > 0 ? diff / scale : diff;
}

struct CheckLog {
  json entries = json::array();
  bool ok = true;
  void add(const std::string& what, double difference, double tolerance) {
    const bool pass = difference <= tolerance && std::isfinite(difference);
    std::printf("  %-58s difference %s (tolerance %s) %s\n", what.c_str(), sci(difference).c_str(),
                sci(tolerance).c_str(), pass ? "ok" : "MISMATCH");
    entries.push_back({{"check", what}, {"difference", difference}, {"tolerance", tolerance}, {"ok", pass}});
    ok = ok && pass;
  }
};

std::vector<double> small_buffer(BlockSpace& space, std::int64_t offset, std::int64_t count) {
  std::vector<double> out(static_cast<std::size_t>(count));
  space.read_small(offset, count, out.data());
  return out;
}

}  // namespace

bool check_spaces(const Problem& problem, const BlockRunSettings& settings, json& out) {
  CheckLog log;
  OperatorOptions operator_options;
  operator_options.precision = settings.precision;
  const InnerMatrix inner =
      prepare_inner_matrix(problem.a, settings.backend, settings.jacobi_scaling, operator_options);
  const int k = problem.k, memory = std::max(2, settings.fcg.memory), steps = 12;
  // The CPU space emulates B exactly where the GPU reads it exactly (split precision, the CSR kernel); with fp16 or
  // bf16 on tiles the GPU rounds B per tile, which the CPU emulates only approximately: looser tolerances.
  const bool exact_b = settings.backend != InnerBackend::bcsr24 || settings.precision == Precision::split;
  GpuBlockSpace gpu(problem.a, inner, k, memory, steps, false);
  CpuBlockSpace cpu(problem.a, inner, k, memory, steps, exact_b ? BRounding::exact : BRounding::tiles);
  std::printf("bcsr24 plan: %s\n", gpu.plan_summary().c_str());
  BlockSpace* spaces[2] = {&gpu, &cpu};
  const small::SmallLayout& l = cpu.layout();
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  const auto random_block = [&] {
    std::vector<double> v(std::size_t(problem.a.rows) * k);
    for (double& x : v) x = u(rng);
    return v;
  };
  const auto random_matrix = [&](int count) {
    std::vector<double> v(std::size_t(count) * k * k);
    for (double& x : v) x = u(rng);
    return v;
  };
  using S = BlockSlots;
  // Fill x, r, z, p(0), q(0), p(1) with the same random data on both sides, b = the problem's.
  for (int slot : {S::x, S::r, S::z, S::p(0), S::q(0), S::p(1), S::q(1)}) {
    const std::vector<double> v = random_block();
    for (BlockSpace* s : spaces) s->set_slot(slot, v);
  }
  for (BlockSpace* s : spaces) s->set_slot(S::b, problem.b);
  const auto compare_slot = [&](const std::string& what, int slot, double tolerance) {
    log.add(what, relative_difference(gpu.slot(slot), cpu.slot(slot)), tolerance);
  };
  const auto compare_small = [&](const std::string& what, std::int64_t offset, std::int64_t count, double tolerance) {
    log.add(what, relative_difference(small_buffer(gpu, offset, count), small_buffer(cpu, offset, count)), tolerance);
  };
  std::printf("== primitives (GPU space against CPU space, same inputs)\n");
  for (BlockSpace* s : spaces) s->gram(S::z, {{S::q(0), l.matrix[small::gram]}, {S::z, l.matrix[small::gram2]}});
  compare_small("gram Z^T Q (two targets, one of them Z)", l.matrix[small::gram], 2 * l.kk(), 1e-12);
  for (BlockSpace* s : spaces) s->column_dots(S::x, S::r, l.column[small::dots]);
  compare_small("column dots", l.column[small::dots], k, 1e-12);
  const std::vector<double> coefficients = random_matrix(2);
  for (BlockSpace* s : spaces) {
    s->write_small(l.matrix[small::work], std::vector<double>(coefficients.begin(), coefficients.begin() + l.kk()));
    s->write_small(l.matrix[small::work2], std::vector<double>(coefficients.begin() + l.kk(), coefficients.end()));
    s->combine(S::z, true, {{S::p(0), l.matrix[small::work], -1.0}, {S::p(1), l.matrix[small::work2], 0.5}});
  }
  compare_slot("combine (accumulate, two terms)", S::z, 1e-12);
  for (BlockSpace* s : spaces) s->multiply(S::q(1), S::p(0));
  compare_slot("fp64 product A P", S::q(1), 1e-12);
  for (BlockSpace* s : spaces) s->residual(S::r, S::b, S::x);
  compare_slot("fp64 residual B - A X", S::r, 1e-12);
  compare_small("residual column norms", l.column[small::r_norm2], k, 1e-12);
  // Small steps on the same Gram matrices: status, whitening, step, orthogonalisation.
  small::SmallStep status;
  status.kind = small::StepKind::status;
  status.tolerance = 1e-8;
  for (BlockSpace* s : spaces) {
    s->column_norms(S::b, l.column[small::b_norm2]);
    s->small_step(status);
  }
  compare_small("status (relative residuals, scales)", l.column[small::relative], k, 1e-12);
  for (BlockSpace* s : spaces) {
    s->gram(S::z, {{S::z, l.matrix[small::gram]}});
    small::SmallStep whiten;
    whiten.kind = small::StepKind::bfcg_whiten;
    whiten.slot = 0;
    s->small_step(whiten);
    s->combine(S::p(0), false, {{S::z, l.matrix[small::coef_t], 1.0}});
    s->multiply(S::q(0), S::p(0));
    s->gram(S::p(0), {{S::q(0), l.matrix[small::gram]}, {S::r, l.matrix[small::gram2]}});
    small::SmallStep step;
    step.kind = small::StepKind::bfcg_step;
    step.slot = 0;
    s->small_step(step);
    s->gram(S::z, {{S::q(0), l.ring(l.ring_gram, 0)}});
    small::SmallStep orthogonalize;
    orthogonalize.kind = small::StepKind::bfcg_orthogonalize;
    orthogonalize.count = 1;
    orthogonalize.slots[0] = 0;
    s->small_step(orthogonalize);
  }
  compare_small("whitening T", l.matrix[small::coef_t], l.kk(), 1e-9);
  compare_slot("new directions P = W T", S::p(0), 1e-9);
  compare_small("step alpha = (P^T Q)^-1 P^T R", l.matrix[small::coef_alpha], l.kk(), 1e-8);
  compare_small("orthogonalisation coefficients", l.ring(l.ring_coef, 0), l.kk(), 1e-8);
  compare_small("status fields", l.status, l.status_count(), 1e-9);
  for (BlockSpace* s : spaces) s->precondition_jacobi(S::z, S::r);
  compare_slot("Jacobi preconditioner", S::z, 1e-14);
  // The Chebyshev preconditioner with a fixed polynomial, and the Lanczos steps.
  const ChebyshevPolynomial polynomial = make_chebyshev(7, 0.05, 2.0);
  for (BlockSpace* s : spaces) s->precondition_chebyshev(S::z, S::r, polynomial);
  compare_slot("Chebyshev preconditioner (degree 7)", S::z, exact_b ? 1e-4 : 5e-2);
  for (BlockSpace* s : spaces) s->lanczos(steps, 3);
  compare_small("Lanczos alphas", l.lanczos_alpha, std::int64_t(steps) * k, exact_b ? 1e-4 : 2e-2);
  compare_small("Lanczos betas", l.lanczos_beta, std::int64_t(steps) * k, exact_b ? 1e-3 : 5e-2);
  // PCG vector operations.
  for (BlockSpace* s : spaces) {
    s->pcg_direction(S::p(0), S::r, true);
    s->multiply(S::q(0), S::p(0));
    s->column_dots(S::p(0), S::q(0), l.column[small::pq]);
    small::SmallStep alpha;
    alpha.kind = small::StepKind::pcg_alpha;
    s->small_step(alpha);
    s->pcg_update(S::x, S::p(0), S::r, S::q(0));
    small::SmallStep beta = status;
    beta.kind = small::StepKind::pcg_beta;
    s->small_step(beta);
    s->pcg_direction(S::p(0), S::r, false);
  }
  compare_small("PCG rho, alpha, beta", l.column[small::rho], std::int64_t(k) * 5, 1e-10);
  compare_slot("PCG x", S::x, 1e-12);
  compare_slot("PCG r", S::r, 1e-10);
  compare_slot("PCG p", S::p(0), 1e-10);

  // Whole solves: the same stop reason and similar histories.
  std::printf("== solves (GPU space against CPU space, same settings)\n");
  BlockRunSettings gpu_settings = settings;
  gpu_settings.device = "gpu";
  gpu_settings.timing = false;
  gpu_settings.warm_up = false;
  gpu_settings.verbose = false;
  BlockRunSettings cpu_settings = gpu_settings;
  cpu_settings.device = "cpu";
  cpu_settings.cpu_rounding = exact_b ? BRounding::exact : BRounding::tiles;
  const BlockRunReport on_gpu = run_block_solver(problem, gpu_settings);
  const BlockRunReport on_cpu = run_block_solver(problem, cpu_settings);
  std::printf("  GPU: %s\n  CPU: %s\n", on_gpu.result.message.c_str(), on_cpu.result.message.c_str());
  const std::size_t rows = std::max(on_gpu.result.history.size(), on_cpu.result.history.size());
  for (std::size_t i = 0; i < rows; ++i)
    std::printf("  iteration %3zu: GPU %s  CPU %s\n", i + 1,
                i < on_gpu.result.history.size() ? sci(on_gpu.result.history[i].max_relative).c_str() : "        -",
                i < on_cpu.result.history.size() ? sci(on_cpu.result.history[i].max_relative).c_str() : "        -");
  log.add("block solve: same stop reason (0 = same)", on_gpu.result.stop == on_cpu.result.stop ? 0.0 : 1.0, 0.0);
  const double iterations = std::fabs(double(on_gpu.result.iterations - on_cpu.result.iterations)) /
                            std::max(1.0, double(on_cpu.result.iterations));
  log.add("block solve: iteration counts (relative difference)", iterations, exact_b ? 0.2 : 0.5);
  log.add("block solve: host check of the GPU solution / tolerance", on_gpu.host_residual / settings.fcg.tolerance,
          on_cpu.host_residual <= settings.fcg.tolerance ? 1.0 : HUGE_VAL);
  if (on_gpu.chebyshev && on_cpu.chebyshev)
    log.add("Chebyshev interval top b", std::fabs(on_gpu.chebyshev->polynomial.b / on_cpu.chebyshev->polynomial.b - 1.0),
            exact_b ? 1e-3 : 2e-2);
  PcgOptions pcg;
  pcg.tolerance = settings.fcg.tolerance;
  const PcgRunReport pcg_gpu = run_pcg_baseline(problem, "gpu", pcg, false, false);
  const PcgRunReport pcg_cpu = run_pcg_baseline(problem, "cpu", pcg, false, false);
  std::printf("  PCG GPU: %s\n  PCG CPU: %s\n", pcg_gpu.result.message.c_str(), pcg_cpu.result.message.c_str());
  log.add("PCG: iteration counts (difference in status reads)",
          std::fabs(double(pcg_gpu.result.iterations - pcg_cpu.result.iterations)) / pcg.check_every, 1.0);
  out = {{"checks", log.entries}, {"ok", log.ok}, {"gpu_block", block_report_json(on_gpu)},
         {"cpu_block", block_report_json(on_cpu)}, {"gpu_pcg", pcg_report_json(pcg_gpu)},
         {"cpu_pcg", pcg_report_json(pcg_cpu)}};
  std::printf("== space check: %s\n", log.ok ? "GPU and CPU spaces agree" : "MISMATCHES (see above)");
  return log.ok;
}

}  // namespace bcsr24::solver
