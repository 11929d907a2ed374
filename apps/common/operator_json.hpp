// JSON forms of an operator's reports (tile census, layout choice, value scaling) and of a plan's report, in the
// field names spmm_run's report documents (docs/SPMM_RUN.md).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "bcsr24/operator_reports.hpp"
#include "bcsr24/spmm_plan.hpp"

namespace bcsr24::apps {

/// Insertion order keeps a report readable in the order its text form uses.
using json = nlohmann::ordered_json;

json census_json(const TileCensus& census);
/// The layout and order chosen, why, and the tiles and bytes before (aligned, file order) and after.
json layout_json(const LayoutReport& report, const TileCensus& after);
/// `policy`: the command line's name of the scaling policy (or where the scaling came from).
json scaling_json(const Fp16Scaling& scaling, const std::string& policy);
/// How a plan splits the bands, nonzeros and bytes between tiles and CSR, and why; with tuning_json's section.
json plan_json(const PlanReport& plan);
/// How an automatic plan was chosen: model or measure, why, the time it took and its budget, and the candidates
/// with their predicted and measured times.
json tuning_json(const PlanReport& plan);

}  // namespace bcsr24::apps
