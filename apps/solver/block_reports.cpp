// Reports of the block solver's and the baseline's runs (block_reports.hpp).
#include "block_reports.hpp"

#include <algorithm>
#include <cstdio>
#include <utility>

#include "solve_text.hpp"

namespace bcsr24::solver {

using json = nlohmann::json;

namespace {

void print_timings(const BlockTimings& t, double solve_seconds, std::int64_t inner_products,
                   std::int64_t outer_products, const char* inner_name, const char* outer_name) {
  const double solve_ms = solve_seconds * 1e3;
  const auto pct = [&](double ms) { return fixed(solve_ms > 0 ? 100.0 * ms / solve_ms : 0.0, 1) + "%"; };
  const double other = std::max(0.0, solve_ms - t.total_ms());
  std::printf("device time: %s products %s s (%s, %.4f ms each); outer fp64 products (%s) %s s (%s, %.4f ms each); "
              "products together %s; vector kernels %s s (%s); block algebra %s s (%s); other (host synchronisation, "
              "launch gaps) %s s (%s)\n",
              inner_name, fixed(t.inner_product_ms / 1e3).c_str(), pct(t.inner_product_ms).c_str(),
              inner_products > 0 ? t.inner_product_ms / double(inner_products) : 0.0,
              outer_name, fixed(t.outer_product_ms / 1e3).c_str(), pct(t.outer_product_ms).c_str(),
              outer_products > 0 ? t.outer_product_ms / double(outer_products) : 0.0,
              pct(t.inner_product_ms + t.outer_product_ms).c_str(), fixed(t.vector_ms / 1e3).c_str(),
              pct(t.vector_ms).c_str(), fixed(t.block_ms / 1e3).c_str(), pct(t.block_ms).c_str(),
              fixed(other / 1e3).c_str(), pct(other).c_str());
}

}  // namespace

void print_final_residuals(double reported, const HostCheck& host) {
  std::printf("max true relative residual %s (host fp64 check %s)", sci(reported).c_str(), sci(host.residual).c_str());
  if (host.error >= 0.0) std::printf(", max relative error vs X_true %s", sci(host.error).c_str());
  std::printf("\n");
}

double bcsr24_bytes(const SparseOperator& op) {
  return double(op.census().sparse24_bytes + op.census().dense_bytes);
}

double csr_f32_bytes(const SparseOperator& op) { return double(op.nnz()) * 8.0 + (op.rows() + 1.0) * 4.0; }

void print_block_report(const BlockRunReport& r) {
  const BlockFcgResult& res = r.result;
  std::printf("%s\n", res.message.c_str());
  for (const int at : res.restart_iterations) std::printf("restart after iteration %d (stagnation)\n", at);
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
                  r.settings.backend == InnerBackend::bcsr24 ? "bcsr24" : "cuSPARSE fp32",
                  r.settings.device == "gpu" ? outer_product_name(r.settings.outer_product) : "cpu");
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
  if (r.timings) print_timings(*r.timings, r.solve_seconds, 0, res.products, "inner", "cusparse");
  std::printf("host synchronisations: %lld during %d iterations\n", static_cast<long long>(res.synchronizations),
              res.iterations);
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

}  // namespace bcsr24::solver
