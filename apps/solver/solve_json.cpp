// bcsr24_solve's JSON report (solve_json.hpp): the settings, the bcsr24 census of the inner matrix, every run of the
// block solver and the baseline, and the comparison. nlohmann::json keeps its keys sorted, so the
// order fields are added in does not show in the file.
#include "solve_json.hpp"

#include <algorithm>
#include <fstream>
#include <utility>

#include "bcsr24/error.hpp"
#include "bcsr24_report_json/report_json.hpp"
#include "block_reports.hpp"

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

json operator_census_json(const SparseOperator& op) {
  // The library's census and scaling as the one serialiser writes them (bcsr24::report_json), beside the byte counts
  // of the two inner formats that only this program compares.
  return {{"bcsr24_bytes", bcsr24_bytes(op)},
          {"csr_f32_bytes", csr_f32_bytes(op)},
          {"precision", precision_name(op.precision())},
          {"census", json(reports::census_json(op.census()))},
          {"scaling", json(reports::scaling_json(op.scaling()))}};
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
            {"outer_product", outer_product_name(r.settings.outer_product)},
            {"memory", r.settings.fcg.memory},
            {"tolerance", r.settings.fcg.tolerance},
            {"restart_iterations", res.restart_iterations},
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

json comparison_json(const std::vector<BlockRunReport>& blocks, const std::vector<PcgRunReport>& baselines) {
  json j = json::object();
  if (blocks.empty()) return j;
  const BlockRunReport& first = blocks.front();
  j["reference"] = first.label;
  j["reference_converged"] = first.result.stop == BlockStop::converged;
  json others = json::array();
  // Every other run (block solver or baseline alike) against the first block run.
  const auto add = [&](const auto& r) {
    others.push_back({{"label", r.label},
                      {"converged", r.result.stop == BlockStop::converged},
                      {"speedup", first.solve_seconds > 0 ? r.solve_seconds / first.solve_seconds : 0.0}});
  };
  for (std::size_t i = 1; i < blocks.size(); ++i) add(blocks[i]);
  for (const PcgRunReport& r : baselines) add(r);
  j["speedups"] = others;
  return j;
}

json settings_json(const Options& o) {
  return {{"solver", o.solver},
          {"rhs", o.rhs},
          {"rhs_kind", o.rhs_kind},
          {"seed", o.seed},
          {"tolerance", o.tolerance},
          {"compare", o.compare},
          {"inner_backend", o.inner_backend},
          {"inner_scaling", o.inner_scaling},
          {"inner_precision", o.inner_precision},
          {"max_iterations", o.fcg.max_iterations},
          {"block_memory", o.fcg.memory},
          {"preconditioner", o.preconditioner},
          {"cheb_degree", o.polynomial.degree},
          {"cheb_ratio", o.polynomial.ratio},
          {"cheb_ratio_factor", o.polynomial.ratio_factor},
          {"cheb_margin", o.polynomial.upper_margin},
          {"lanczos_steps", o.polynomial.lanczos_steps},
          {"check_every", o.check_every},
          {"time_limit", o.time_limit},
          {"fallback", o.fallback},
          {"stall_window", o.stall_window},
          {"replace_every", o.replace_every},
          {"device", o.device},
          {"gpus", o.gpus},
          {"mpi", o.mpi},
          {"partition", o.partition}};
}

void write_json(const Options& o, const json& matrix_json, const json& runs, const json& extra) {
  json out = {{"program", kProgram}, {"matrix", matrix_json}, {"settings", settings_json(o)}, {"runs", runs}};
  for (const auto& [key, value] : extra.items()) out[key] = value;
  std::ofstream file(o.json_path);
  if (!(file << out.dump(2) << "\n")) throw Error("cannot write " + o.json_path);
}

}  // namespace bcsr24::solver
