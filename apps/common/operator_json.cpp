// JSON forms of the operator's and the plan's reports (operator_json.hpp).
#include "operator_json.hpp"

namespace bcsr24::apps {

namespace {

double share(double part, double whole) { return whole > 0 ? part / whole : 0.0; }

/// The shares of the plan's three paths in a total.
json path_shares(std::int64_t sparse24, std::int64_t dense, std::int64_t csr, std::int64_t vectors) {
  const double whole = double(sparse24 + dense + csr + vectors);
  return {{"sparse24", share(double(sparse24), whole)},
          {"dense", share(double(dense), whole)},
          {"csr", share(double(csr), whole)},
          {"vectors", share(double(vectors), whole)}};
}

}  // namespace

json census_json(const TileCensus& census) {
  return {{"tile_rows", census.tile_rows},
          {"tile_cols", census.tile_cols},
          {"dense_tiles", census.dense_tiles},
          {"sparse24_tiles", census.sparse24_tiles},
          {"zero_tiles", census.zero_tiles},
          {"stored_tiles", census.stored_tiles()},
          {"sparse24_share", census.sparse24_share()},
          {"nnz", census.nnz},
          {"dense_nnz", census.dense_nnz},
          {"sparse24_nnz", census.sparse24_nnz},
          {"nnz_per_tile", census.nnz_per_tile()},
          {"dense_bytes", census.dense_bytes},
          {"sparse24_bytes", census.sparse24_bytes},
          {"empty_tile_rows", census.empty_tile_rows},
          {"max_tiles_per_tile_row", census.max_tiles_per_tile_row},
          {"index_bytes", census.index_bytes},
          {"b_row_index", census.gathered_b_rows ? "gathered" : "implicit"},
          {"row_order_bytes", census.row_order_bytes},
          {"layout", layout_name(census.layout)},
          {"reordering", reordering_name(census.reordering)}};
}

json layout_json(const LayoutReport& r, const TileCensus& after) {
  json j = {{"layout", layout_name(r.layout)},
            {"reordering", reordering_name(r.reordering)},
            {"reason", r.reason},
            {"baseline_stored_tiles", r.baseline_stored_tiles},
            {"baseline_sparse24_tiles", r.baseline_sparse24_tiles},
            {"baseline_sparse24_share", share(double(r.baseline_sparse24_tiles), double(r.baseline_stored_tiles))},
            {"baseline_bytes", r.baseline_bytes},
            {"stored_tiles", after.stored_tiles()},
            {"sparse24_share", after.sparse24_share()},
            {"bytes", after.total_bytes()},
            {"index_bytes", after.index_bytes},
            {"index_share", share(double(after.index_bytes), double(after.total_bytes()))},
            {"reorder_s", r.reorder_seconds},
            {"baseline_s", r.baseline_seconds},
            {"pack_s", r.pack_seconds},
            {"total_s", r.total_seconds}};
  if (r.condensed_tiles_file_order >= 0) j["condensed_tiles_file_order"] = r.condensed_tiles_file_order;
  if (r.condensed_tiles_rcm >= 0) j["condensed_tiles_rcm"] = r.condensed_tiles_rcm;
  return j;
}

json scaling_json(const Fp16Scaling& scaling, const std::string& policy) {
  return {{"policy", policy},
          {"exponent", scaling.exponent},
          {"scaled", scaling.exponent != 0},
          {"max_abs", scaling.max_abs},
          {"min_abs_nonzero", scaling.min_abs_nonzero},
          {"overflow_count", scaling.overflow_count},
          {"underflow_count", scaling.underflow_count},
          {"flushed_count", scaling.flushed_count},
          {"subnormal_count", scaling.subnormal_count},
          {"per_row", scaling.per_row},
          {"min_row_exponent", scaling.min_row_exponent},
          {"max_row_exponent", scaling.max_row_exponent},
          {"max_flushed_relative", scaling.max_flushed_relative},
          {"max_relative_error", scaling.max_relative_error},
          {"frobenius_relative_error", scaling.frobenius_relative_error}};
}

json plan_json(const PlanReport& plan) {
  return {{"tile_bands", plan.tile_bands},
          {"csr_bands", plan.csr_bands},
          {"vector_bands", plan.vector_bands},
          {"vector_nnz", plan.vector_nnz},
          {"vector_bytes", plan.vector_bytes},
          {"sparse24_tiles", plan.sparse24_tiles},
          {"dense_tiles", plan.dense_tiles},
          {"sparse24_nnz", plan.sparse24_nnz},
          {"dense_nnz", plan.dense_nnz},
          {"csr_nnz", plan.csr_nnz},
          {"nnz_share", path_shares(plan.sparse24_nnz, plan.dense_nnz, plan.csr_nnz, plan.vector_nnz)},
          {"sparse24_bytes", plan.sparse24_bytes},
          {"dense_bytes", plan.dense_bytes},
          {"csr_bytes", plan.csr_bytes},
          {"bytes_share", path_shares(plan.sparse24_bytes, plan.dense_bytes, plan.csr_bytes, plan.vector_bytes)},
          {"split_bands", plan.split_bands},
          {"split_parts", plan.split_parts},
          {"tile_pipeline", plan.deep_tile_pipeline ? "deep" : "standard"},
          {"tile_stages", plan.tile_stages},
          {"band_groups", plan.band_groups},
          {"band_group_steps", plan.band_group_steps},
          {"csr_long_rows", plan.csr_long_rows},
          {"csr_long_blocks", plan.csr_long_blocks},
          {"csr_medium_rows", plan.csr_medium_rows},
          {"csr_short_tiles", plan.csr_short_tiles},
          {"csr_shape", {{"chunks", plan.csr_chunks}, {"nz_lanes", plan.csr_nz_lanes}}},
          {"predicted_ms", plan.predicted_us >= 0 ? json(plan.predicted_us * 1e-3) : json(nullptr)},
          {"tiles_only_predicted_ms", plan.tiles_only_us * 1e-3},
          {"csr_only_predicted_ms", plan.csr_only_us >= 0 ? json(plan.csr_only_us * 1e-3) : json(nullptr)},
          {"reason", plan.reason},
          {"tuning", tuning_json(plan)}};
}

json tuning_json(const PlanReport& plan) {
  json candidates = json::array();
  for (const PlanCandidate& c : plan.candidates)
    candidates.push_back({{"description", c.description},
                          {"predicted_us", c.predicted_us},
                          {"measured_us", c.measured_us >= 0 ? json(c.measured_us) : json(nullptr)},
                          {"runs", c.runs},
                          {"build_ms", c.build_ms >= 0 ? json(c.build_ms) : json(nullptr)},
                          {"chosen", c.chosen},
                          {"note", c.note}});
  return {{"mode", tuning_name(plan.tuning)},
          {"reason", plan.tuning_reason},
          {"ms", plan.tuning_ms},
          {"budget_ms", plan.tuning_budget_ms > 0 ? json(plan.tuning_budget_ms) : json(nullptr)},
          {"budget_source", plan.tuning_budget_source},
          {"products_per_run", plan.tuning_batch},
          {"parts_ms",
           {{"drafting", plan.tuning_drafting_ms},
            {"building", plan.tuning_building_ms},
            {"loading", plan.tuning_loading_ms},
            {"setup", plan.tuning_setup_ms},
            {"warmup", plan.tuning_warmup_ms},
            {"timing", plan.tuning_timing_ms}}},
          {"candidates", candidates}};
}

}  // namespace bcsr24::apps
