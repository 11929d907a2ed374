// The legacy solver's runs and reports (legacy_runs.hpp).
#include "legacy_runs.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "bcsr24/distributed_partition.hpp"
#include "block_reports.hpp"
#include "solve_json.hpp"
#include "cpu_system.hpp"
#include "flexible_cg.hpp"
#include "gpu_system.hpp"
#include "solve_text.hpp"
#if BCSR24_HAS_NCCL
#include "distributed_solve.hpp"
#include "rank_session.hpp"
#endif

namespace bcsr24::solver {

using json = nlohmann::json;

namespace {

void print_census(const SparseOperator& op, bool scaled) {
  const TileCensus& c = op.census();
  const Fp16Scaling& s = op.scaling();
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
LegacyRunReport run_legacy_backend(const Problem& problem, InnerBackend backend, const Options& o, bool first, json& matrix_json,
                      const ranks::Session* mpi) {
  LegacyRunReport report;
  report.backend = backend;
  const bool scaled = o.inner_scaling == "jacobi";
  OperatorOptions operator_options;
  operator_options.precision = precision_from_name(o.inner_precision);
  OuterOptions outer = outer_options(o);
  const InnerOptions& inner_options = o.inner;
  const OuterObserver observer = progress_printer(o);
#if BCSR24_HAS_NCCL
  if (o.gpus > 0 || mpi) {
    DistributedSolveSettings settings;
    settings.gpus = o.gpus;
    settings.mpi_session = mpi;
    settings.backend = backend;
    settings.jacobi_scaling = scaled;
    settings.operator_options = operator_options;
    settings.partition = partition_method_from_name(o.partition);
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
    report.partition = partition_method_name(d.partition);
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
    report.host = check_on_host(problem, d.x);
    return report;
  }
#endif
  InnerMatrix inner = prepare_inner_matrix(problem.a, backend, scaled, operator_options);
  report.preprocess_seconds = inner.preprocess_seconds;
  if (inner.op) {
    print_census(*inner.op, scaled);
    if (first || !matrix_json.contains("bcsr24")) matrix_json["bcsr24"] = operator_census_json(*inner.op);
  }

  const int slots = outer_slot_count(o.outer.memory);
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
  report.host = check_on_host(problem, x);
  return report;
}

void print_legacy_report(const LegacyRunReport& r) {
  const OuterResult& res = r.result;
  std::printf("%s\n", res.message.c_str());
  if (res.fallback_iteration >= 0)
    std::printf("fallback at outer iteration %d: %s\n", res.fallback_iteration, res.fallback_reason.c_str());
  std::printf("outer iterations %d (%d Jacobi-preconditioned), inner solves %d, inner products %d, inner breakdowns %d, "
              "residual replacements %d\n",
              res.outer_iterations, res.jacobi_iterations, res.inner_solves, res.inner_products, res.inner_breakdowns,
              res.residual_replacements);
  print_final_residuals(res.max_final_relative_residual, r.host);
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
    std::printf("distributed over %d GPU%s (%s, rows by %s; times and product figures: the slowest rank; memory: "
                "the largest)%s\n",
                r.gpus, r.gpus == 1 ? "" : "s",
                std::string(r.launch) == "mpi" ? "one MPI process each" : "one thread each", r.partition,
                r.ranks_agree ? "" : "; WARNING: the ranks made different numbers of outer iterations");
    std::int64_t halo = 0, largest = 0, entries = 0;
    for (const json& rank : r.ranks) {
      halo += rank["halo_rows"].get<std::int64_t>();
      largest = std::max(largest, rank["nnz"].get<std::int64_t>());
      entries += rank["nnz"].get<std::int64_t>();
    }
    // Every halo row moves once per product: 8 bytes per column in the fp64 products, 4 in the fp32 inner ones.
    std::printf("  halo rows in all %lld (%lld bytes per column of an fp64 product); largest rank %.3f x the mean "
                "nonzeros\n",
                static_cast<long long>(halo), static_cast<long long>(halo * 8),
                entries > 0 ? double(largest) * double(r.ranks.size()) / double(entries) : 0.0);
    for (const json& rank : r.ranks)
      std::printf("  rank %d: rows %d (from %d), %lld nonzeros, halo rows in %d / out %d per product, device memory "
                  "%.1f MiB, solve %s s\n",
                  rank["rank"].get<int>(), rank["rows"].get<int>(), rank["row_begin"].get<int>(),
                  static_cast<long long>(rank["nnz"].get<std::int64_t>()), rank["halo_rows"].get<int>(),
                  rank["send_rows"].get<int>(), double(rank["device_bytes"].get<std::int64_t>()) / 1048576.0,
                  fixed(rank["solve_seconds"].get<double>()).c_str());
  }
}

}  // namespace

/// The legacy solver: flexible CG with block CG inside, on one GPU, the CPU, or distributed.
int run_legacy(const Options& o, const Problem& problem, json& matrix_json, const ranks::Session* mpi) {
  std::printf("solving with %d right-hand sides (%s), tolerance %s; legacy solver: inner block CG %d products or "
              "relative residual %s, scaling %s, precision %s; outer memory %d, fallback %s\n",
              problem.k, o.rhs_kind.c_str(), sci(o.tolerance, 1).c_str(), o.inner.max_products,
              sci(o.inner.tolerance, 1).c_str(), o.inner_scaling.c_str(), o.inner_precision.c_str(), o.outer.memory,
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
    warm.outer.max_outer = 1;
    warm.verbose = false;
    json scratch = matrix_json;
    for (InnerBackend backend : backends) run_legacy_backend(problem, backend, warm, false, scratch, mpi);
    std::fflush(stdout);
  }
  std::vector<LegacyRunReport> reports;
  for (std::size_t i = 0; i < backends.size(); ++i) {
    std::printf("\n== legacy solver, inner backend %s\n", inner_backend_name(backends[i]));
    std::fflush(stdout);
    reports.push_back(run_legacy_backend(problem, backends[i], o, i == 0, matrix_json, mpi));
    print_legacy_report(reports.back());
    std::fflush(stdout);
  }

  if (reports.size() == 2 && reports[0].timings && reports[1].timings) {
    const LegacyRunReport& b = reports[0];
    const LegacyRunReport& c = reports[1];
    std::printf("\n== comparison (same solver, inner products through bcsr24 vs cuSPARSE CSR fp32)\n");
    std::printf("%-18s %-11s %6s %8s %10s %9s %12s %8s\n", "inner backend", "stop", "outer", "inner", "residual",
                "solve s", "products s", "share");
    for (const LegacyRunReport* r : {&b, &c}) {
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
    for (const LegacyRunReport& r : reports) runs.push_back(legacy_report_json(r));
    write_json(o, matrix_json, runs, json::object());
  }
  const bool all_converged = std::all_of(reports.begin(), reports.end(),
                                         [](const LegacyRunReport& r) { return r.result.stop == StopReason::converged; });
  return all_converged ? 0 : kExitNotConverged;
}

}  // namespace bcsr24::solver
