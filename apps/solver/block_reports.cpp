// Reports of the block solver's and the baseline's runs (block_reports.hpp).
#include "block_reports.hpp"

#include <algorithm>
#include <cstdio>
#include <utility>

#include "solve_text.hpp"

namespace bcsr24::solver {

using json = nlohmann::json;

namespace {

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

void to_json(json& j, const BlockIterationRecord& h) {
  j = {{"iteration", h.iteration},
          {"max_relative_residual", h.max_relative},
          {"active", h.active},
          {"directions", h.directions},
          {"deflated", h.deflated},
          {"chebyshev", h.chebyshev},
          {"true_residual", h.true_residual},
          {"seconds", h.seconds},
          {"relative_residual_per_column", h.relative}};
}

void to_json(json& j, const PcgCheck& h) {
  j = {{"iteration", h.iteration},
          {"max_relative_residual", h.max_relative},
          {"active", h.active},
          {"true_residual", h.true_residual},
          {"seconds", h.seconds}};
}

void print_final_residuals(double reported, const HostCheck& host) {
  std::printf("max true relative residual %s (host fp64 check %s)", sci(reported).c_str(), sci(host.residual).c_str());
  if (host.error >= 0.0) std::printf(", max relative error vs X_true %s", sci(host.error).c_str());
  std::printf("\n");
}

void add_host_check(json& j, const HostCheck& host) {
  j["host_check_relative_residual"] = host.residual;
  if (host.error >= 0.0) j["max_relative_error"] = host.error;
}

json run_json(const RunOutcome& run, json history) {
  json j = {{"solver", run.solver},
            {"stop", run.stop},
            {"message", run.message},
            {"max_relative_residual", run.max_relative_residual},
            {"relative_residual_per_column", run.relative_residual_per_column},
            {"solve_seconds", run.solve_seconds},
            {"upload_seconds", run.upload_seconds},
            {"history", std::move(history)}};
  add_host_check(j, run.host);
  return j;
}

double bcsr24_bytes(const SparseOperator& op) {
  return double(op.census().sparse24_bytes + op.census().dense_bytes);
}

double csr_f32_bytes(const SparseOperator& op) { return double(op.nnz()) * 8.0 + (op.rows() + 1.0) * 4.0; }

json operator_census_json(const SparseOperator& op) {
  const TileCensus& c = op.census();
  const Fp16Scaling& s = op.scaling();
  return {{"bcsr24_bytes", bcsr24_bytes(op)},
          {"csr_f32_bytes", csr_f32_bytes(op)},
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
  print_final_residuals(res.max_final_relative, r.host);
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
  print_final_residuals(res.max_final_relative, r.host);
  std::printf("time to solution %s s (%s ms per iteration)\n", fixed(r.solve_seconds).c_str(),
              fixed(res.iterations > 0 ? 1e3 * r.solve_seconds / res.iterations : 0.0).c_str());
  if (r.timings) print_timings(*r.timings, r.solve_seconds, 0, res.products, "inner");
  std::printf("host synchronisations: %lld during %d iterations\n", static_cast<long long>(res.synchronizations),
              res.iterations);
}

json block_report_json(const BlockRunReport& r) {
  const BlockFcgResult& res = r.result;
  json j = run_json({"block", block_stop_name(res.stop), res.message, res.max_final_relative, res.final_relative,
                     r.solve_seconds, r.upload_seconds, r.host},
                    res.history);
  j.update({{"label", r.label},
            {"device", r.settings.device},
            {"backend", inner_backend_name(r.settings.backend)},
            {"precision", r.settings.backend == InnerBackend::bcsr24 ? precision_name(r.settings.precision) : "fp32"},
            {"preconditioner", r.settings.chebyshev ? "chebyshev" : "jacobi"},
            {"jacobi_scaling", r.settings.jacobi_scaling},
            {"memory", r.settings.fcg.memory},
            {"tolerance", r.settings.fcg.tolerance},
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
            {"initial_relative_residual_per_column", res.initial_relative},
            {"lanczos_seconds", r.lanczos_seconds},
            {"iterate_seconds", r.iterate_seconds},
            {"preprocess_seconds", r.preprocess_seconds},
            {"device_bytes", r.device_bytes},
            {"plan", r.plan}});
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
  json j = run_json({"jacobi_pcg", block_stop_name(res.stop), res.message, res.max_final_relative, res.final_relative,
                     r.solve_seconds, r.upload_seconds, r.host},
                    res.history);
  j.update({{"label", r.label},
            {"device", r.device},
            {"tolerance", r.options.tolerance},
            {"check_every", r.options.check_every},
            {"iterations", res.iterations},
            {"converged_iteration", res.converged_iteration},
            {"restarts", res.restarts},
            {"outer_products", res.products},
            {"synchronizations", res.synchronizations},
            {"device_bytes", r.device_bytes}});
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
                sci(r.host.residual).c_str(), fixed(r.solve_seconds).c_str(), fixed(100.0 * share, 1).c_str(),
                fixed(reference > 0 ? r.solve_seconds / reference : 0.0, 2).c_str());
  }
  for (const PcgRunReport& r : baselines) {
    const double share = r.timings ? r.timings->outer_product_ms / (r.solve_seconds * 1e3) : 0.0;
    std::printf("%-32s %-14s %6d %9lld %10s %9s %8s%% %7sx\n", r.label.c_str(), block_stop_name(r.result.stop),
                r.result.iterations, static_cast<long long>(r.result.products), sci(r.host.residual).c_str(),
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

}  // namespace bcsr24::solver
