// The reports of bcsr24_solve's block-solver and baseline runs: text on stdout and JSON, the comparison of the
// runs of one process, and the bcsr24 census of the inner matrix.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bcsr24/sparse_operator.hpp"
#include "block_runs.hpp"

namespace bcsr24::solver {

/// Bytes of A one product reads: the two tile lists for bcsr24, and CSR with fp32 values for cuSPARSE. A is the
/// bulk of a product's memory traffic for small k, so their ratio is the first suitability indicator.
double bcsr24_bytes(const SparseOperator& op);
double csr_f32_bytes(const SparseOperator& op);

/// "max true relative residual R (host fp64 check H)", ", max relative error vs X_true E" when the error is known,
/// and the end of the line: the last figures of every run's text report (`reported`: the solver's own).
void print_final_residuals(double reported, const HostCheck& host);
/// The host check's JSON fields: host_check_relative_residual, and max_relative_error when the error is known.
void add_host_check(nlohmann::json& j, const HostCheck& host);

/// What the JSON of every run (block solver, baseline, legacy solver) holds: which solver, how it stopped, its final
/// residuals by the solver and by the host's check, and its times.
struct RunOutcome {
  const char* solver;
  const char* stop;
  const std::string& message;
  double max_relative_residual;
  const std::vector<double>& relative_residual_per_column;
  double solve_seconds;
  double upload_seconds;
  const HostCheck& host;
};
/// The run's JSON with those fields and its iteration history; each solver adds its own fields.
nlohmann::json run_json(const RunOutcome& run, nlohmann::json history);

/// The bcsr24 census and fp16 scaling of an operator, for the JSON reports.
nlohmann::json operator_census_json(const SparseOperator& op);

void print_block_report(const BlockRunReport& report);
void print_pcg_report(const PcgRunReport& report);
/// The comparison table and the speedups of the first block run over the others.
void print_comparison(const std::vector<BlockRunReport>& blocks, const std::vector<PcgRunReport>& baselines);
nlohmann::json block_report_json(const BlockRunReport& report);
nlohmann::json pcg_report_json(const PcgRunReport& report);
nlohmann::json comparison_json(const std::vector<BlockRunReport>& blocks, const std::vector<PcgRunReport>& baselines);

}  // namespace bcsr24::solver
