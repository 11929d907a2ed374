// The library's reports as JSON (report_json.hpp).
#include "bcsr24_report_json/report_json.hpp"

#include "bcsr24/precision.hpp"

namespace bcsr24::reports {

namespace {

double share(double part, double whole) { return whole > 0 ? part / whole : 0.0; }

/// The shares of a plan's four paths in a total (nonzeros or bytes).
Json path_shares(std::int64_t sparse24, std::int64_t dense, std::int64_t csr, std::int64_t vectors) {
  const double whole = double(sparse24 + dense + csr + vectors);
  return {{"sparse24", share(double(sparse24), whole)},
          {"dense", share(double(dense), whole)},
          {"csr", share(double(csr), whole)},
          {"vectors", share(double(vectors), whole)}};
}

Json candidate_json(const experimental::PlanCandidate& c) {
  return {{"description", c.description}, {"predicted_us", c.predicted_us}, {"measured_us", c.measured_us},
          {"runs", c.runs},               {"build_ms", c.build_ms},         {"chosen", c.chosen},
          {"note", c.note}};
}

Json diagnostics_json(const experimental::PlanDiagnostics& d) {
  Json candidates = Json::array();
  for (const experimental::PlanCandidate& c : d.candidates) candidates.push_back(candidate_json(c));
  return {{"sparse24_tiles", d.sparse24_tiles},
          {"dense_tiles", d.dense_tiles},
          {"sparse24_bytes", d.sparse24_bytes},
          {"dense_bytes", d.dense_bytes},
          {"csr_bytes", d.csr_bytes},
          {"vector_bytes", d.vector_bytes},
          {"bytes_share", path_shares(d.sparse24_bytes, d.dense_bytes, d.csr_bytes, d.vector_bytes)},
          {"split_bands", d.split_bands},
          {"split_parts", d.split_parts},
          {"tile_stages", d.tile_stages},
          {"deep_tile_pipeline", d.deep_tile_pipeline},
          {"band_groups", d.band_groups},
          {"band_group_steps", d.band_group_steps},
          {"csr_long_rows", d.csr_long_rows},
          {"csr_long_blocks", d.csr_long_blocks},
          {"csr_split_rows", d.csr_split_rows},
          {"csr_medium_rows", d.csr_medium_rows},
          {"csr_short_tiles", d.csr_short_tiles},
          {"csr_chunks", d.csr_chunks},
          {"csr_nz_lanes", d.csr_nz_lanes},
          {"csr_short_pairs", d.csr_short_pairs},
          {"csr_short_run_rows", d.csr_short_run_rows},
          {"tiles_only_us", d.tiles_only_us},
          {"csr_only_us", d.csr_only_us},
          {"candidates", candidates},
          {"tuning_batch", d.tuning_batch},
          {"tuning_drafting_ms", d.tuning_drafting_ms},
          {"tuning_building_ms", d.tuning_building_ms},
          {"tuning_loading_ms", d.tuning_loading_ms},
          {"tuning_setup_ms", d.tuning_setup_ms},
          {"tuning_warmup_ms", d.tuning_warmup_ms},
          {"tuning_timing_ms", d.tuning_timing_ms}};
}

}  // namespace

Json census_json(const TileCensus& c) {
  return {{"tile_rows", c.tile_rows},
          {"tile_cols", c.tile_cols},
          {"zero_tiles", c.zero_tiles},
          {"sparse24_tiles", c.sparse24_tiles},
          {"dense_tiles", c.dense_tiles},
          {"stored_tiles", c.stored_tiles()},
          {"sparse24_share", c.sparse24_share()},
          {"nnz", c.nnz},
          {"sparse24_nnz", c.sparse24_nnz},
          {"dense_nnz", c.dense_nnz},
          {"nnz_per_tile", c.nnz_per_tile()},
          {"max_tiles_per_tile_row", c.max_tiles_per_tile_row},
          {"empty_tile_rows", c.empty_tile_rows},
          {"sparse24_bytes", c.sparse24_bytes},
          {"dense_bytes", c.dense_bytes},
          {"index_bytes", c.index_bytes},
          {"gathered_b_rows", c.gathered_b_rows},
          {"row_order_bytes", c.row_order_bytes},
          {"total_bytes", c.total_bytes()},
          {"layout", layout_name(c.layout)},
          {"reordering", reordering_name(c.reordering)}};
}

Json layout_json(const LayoutReport& r, const TileCensus& after) {
  return {{"layout", layout_name(r.layout)},
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
          {"condensed_tiles_file_order", r.condensed_tiles_file_order},
          {"condensed_tiles_rcm", r.condensed_tiles_rcm},
          {"reorder_seconds", r.reorder_seconds},
          {"baseline_seconds", r.baseline_seconds},
          {"pack_seconds", r.pack_seconds},
          {"total_seconds", r.total_seconds}};
}

Json scaling_json(const Fp16Scaling& s) {
  return {{"exponent", s.exponent},
          {"scaled", s.exponent != 0},
          {"per_row", s.per_row},
          {"min_row_exponent", s.min_row_exponent},
          {"max_row_exponent", s.max_row_exponent},
          {"max_abs", s.max_abs},
          {"min_abs_nonzero", s.min_abs_nonzero},
          {"overflow_count", s.overflow_count},
          {"underflow_count", s.underflow_count},
          {"subnormal_count", s.subnormal_count},
          {"flushed_count", s.flushed_count},
          {"max_flushed_relative", s.max_flushed_relative},
          {"max_relative_error", s.max_relative_error},
          {"frobenius_relative_error", s.frobenius_relative_error}};
}

Json options_json(const OperatorOptions& o) {
  return {{"precision", precision_name(o.precision)},
          {"scaling", scaling_policy_name(o.scaling)},
          {"layout", layout_name(o.layout)},
          {"reorder", reordering_name(o.reorder)},
          {"threads", o.threads},
          {"pattern_values", o.matrix_market.pattern_values == MatrixMarketOptions::PatternValues::ones ? "ones" : "random"},
          {"seed", o.matrix_market.seed}};
}

Json device_json(const DeviceInfo& info) {
  return {{"available", info.available},
          {"name", info.name},
          {"compute_capability", info.compute_capability},
          {"multiprocessors", info.multiprocessors},
          {"l2_bytes", info.l2_bytes},
          {"global_memory_bytes", info.global_memory_bytes},
          {"reason", info.reason}};
}

Json plan_json(const PlanReport& r) {
  return {{"kernel", kernel_name(r.kernel)},
          {"n", r.n},
          {"precision", precision_name(r.precision)},
          {"input", element_type_name(r.input)},
          {"tile_bands", r.tile_bands},
          {"csr_bands", r.csr_bands},
          {"vector_bands", r.vector_bands},
          {"empty_bands", r.empty_bands},
          {"sparse24_nnz", r.sparse24_nnz},
          {"dense_nnz", r.dense_nnz},
          {"csr_nnz", r.csr_nnz},
          {"vector_nnz", r.vector_nnz},
          {"nnz_share", path_shares(r.sparse24_nnz, r.dense_nnz, r.csr_nnz, r.vector_nnz)},
          {"predicted_us", r.predicted_us},
          {"reason", r.reason},
          {"tuning", tuning_name(r.tuning)},
          {"tuning_reason", r.tuning_reason},
          {"tuning_budget_ms", r.tuning_budget_ms},
          {"tuning_budget_source", r.tuning_budget_source},
          {"tuning_ms", r.tuning_ms},
          {"diagnostics", diagnostics_json(r.diagnostics)}};
}

}  // namespace bcsr24::reports
