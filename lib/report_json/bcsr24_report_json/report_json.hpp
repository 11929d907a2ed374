// The library's reports as JSON: the one place that names their keys, for the programs' --json output (apps/) and
// the Python module's dicts (python/src). In-tree only (bcsr24::report_json), never installed.
//
// The keys are the C++ field names; enums are written as their names (kernel_name, layout_name, ...); a nested
// struct is a nested object (PlanReport::diagnostics, its candidates); values the structs compute are added under
// their method's name (stored_tiles, sparse24_share, ...). Numbers are written as the structs hold them: -1 keeps its
// documented meaning ("not computed", "not measured", "not possible").
#pragma once

#include <nlohmann/json.hpp>

#include "bcsr24/device.hpp"
#include "bcsr24/operator_options.hpp"
#include "bcsr24/operator_reports.hpp"
#include "bcsr24/spmm_plan.hpp"

namespace bcsr24::reports {

/// Insertion order keeps a report in the order of its struct, which is also the order its text form reads in.
using Json = nlohmann::ordered_json;

/// TileCensus, with stored_tiles, sparse24_share, nnz_per_tile and total_bytes.
Json census_json(const TileCensus& census);
/// LayoutReport, with what the chosen layout came to (`after`, the operator's census): its stored tiles, 2:4 share,
/// bytes and index bytes beside the baseline's (baseline_sparse24_share, index_share).
Json layout_json(const LayoutReport& report, const TileCensus& after);
/// Fp16Scaling, with `scaled` (a matrix-wide exponent other than 0).
Json scaling_json(const Fp16Scaling& scaling);
/// OperatorOptions, its Matrix Market options (pattern_values, seed) inline.
Json options_json(const OperatorOptions& options);
/// DeviceInfo.
Json device_json(const DeviceInfo& info);
/// PlanReport, with nnz_share (the shares of sparse24_nnz, dense_nnz, csr_nnz, vector_nnz) and its diagnostics as
/// an object of their own (with bytes_share, and the candidates as a list).
Json plan_json(const PlanReport& report);

}  // namespace bcsr24::reports
