// bcsr24_solve's JSON report (--json FILE): the settings, the bcsr24 census of the inner matrix, every run of the
// block solver and the baseline, and the comparison of the runs.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bcsr24/sparse_operator.hpp"
#include "block_runs.hpp"
#include "solve_options.hpp"

namespace bcsr24::solver {

/// The options as the report's "settings" (the solver-dependent defaults resolved).
nlohmann::json settings_json(const Options& o);
/// Writes the report to o.json_path: program, matrix, settings, runs, then the members of `extra`.
/// @throw Error if the file cannot be written.
void write_json(const Options& o, const nlohmann::json& matrix_json, const nlohmann::json& runs,
                const nlohmann::json& extra);

/// What the JSON of every run (block solver, baseline) holds: which solver, how it stopped, its final
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
/// The host check's JSON fields: host_check_relative_residual, and max_relative_error when the error is known.
void add_host_check(nlohmann::json& j, const HostCheck& host);

/// The bcsr24 census and fp16 scaling of an operator.
nlohmann::json operator_census_json(const SparseOperator& op);

nlohmann::json block_report_json(const BlockRunReport& report);
nlohmann::json pcg_report_json(const PcgRunReport& report);
/// The first block run's speedup over the others.
nlohmann::json comparison_json(const std::vector<BlockRunReport>& blocks, const std::vector<PcgRunReport>& baselines);

}  // namespace bcsr24::solver
