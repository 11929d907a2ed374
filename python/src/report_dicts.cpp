// The library's reports as Python dicts (report_dicts.hpp).
#include "report_dicts.hpp"

#include <nanobind/stl/string.h>

#include "bcsr24/precision.hpp"

namespace nb = nanobind;

namespace bcsr24::python {

nb::dict census_dict(const TileCensus& c) {
  nb::dict d;
  d["tile_rows"] = c.tile_rows;
  d["tile_cols"] = c.tile_cols;
  d["zero_tiles"] = c.zero_tiles;
  d["sparse24_tiles"] = c.sparse24_tiles;
  d["dense_tiles"] = c.dense_tiles;
  d["stored_tiles"] = c.stored_tiles();
  d["sparse24_share"] = c.sparse24_share();
  d["nnz"] = c.nnz;
  d["nnz_per_tile"] = c.nnz_per_tile();
  d["sparse24_nnz"] = c.sparse24_nnz;
  d["dense_nnz"] = c.dense_nnz;
  d["max_tiles_per_tile_row"] = c.max_tiles_per_tile_row;
  d["empty_tile_rows"] = c.empty_tile_rows;
  d["sparse24_bytes"] = c.sparse24_bytes;
  d["dense_bytes"] = c.dense_bytes;
  d["index_bytes"] = c.index_bytes;
  d["row_order_bytes"] = c.row_order_bytes;
  d["total_bytes"] = c.total_bytes();
  d["gathered_b_rows"] = c.gathered_b_rows;
  d["layout"] = layout_name(c.layout);
  d["reordering"] = reordering_name(c.reordering);
  return d;
}

nb::dict layout_dict(const LayoutReport& r) {
  nb::dict d;
  d["layout"] = layout_name(r.layout);
  d["reordering"] = reordering_name(r.reordering);
  d["reason"] = r.reason;
  d["baseline_stored_tiles"] = r.baseline_stored_tiles;
  d["baseline_sparse24_tiles"] = r.baseline_sparse24_tiles;
  d["baseline_bytes"] = r.baseline_bytes;
  d["condensed_tiles_file_order"] = r.condensed_tiles_file_order;
  d["condensed_tiles_rcm"] = r.condensed_tiles_rcm;
  d["reorder_seconds"] = r.reorder_seconds;
  d["baseline_seconds"] = r.baseline_seconds;
  d["pack_seconds"] = r.pack_seconds;
  d["total_seconds"] = r.total_seconds;
  return d;
}

nb::dict scaling_dict(const Fp16Scaling& s) {
  nb::dict d;
  d["exponent"] = s.exponent;
  d["per_row"] = s.per_row;
  d["min_row_exponent"] = s.min_row_exponent;
  d["max_row_exponent"] = s.max_row_exponent;
  d["max_abs"] = s.max_abs;
  d["min_abs_nonzero"] = s.min_abs_nonzero;
  d["overflow_count"] = s.overflow_count;
  d["underflow_count"] = s.underflow_count;
  d["subnormal_count"] = s.subnormal_count;
  d["flushed_count"] = s.flushed_count;
  d["max_flushed_relative"] = s.max_flushed_relative;
  d["max_relative_error"] = s.max_relative_error;
  d["frobenius_relative_error"] = s.frobenius_relative_error;
  return d;
}

nb::dict options_dict(const OperatorOptions& o) {
  nb::dict d;
  d["precision"] = precision_name(o.precision);
  d["scaling"] = scaling_policy_name(o.scaling);
  d["layout"] = layout_name(o.layout);
  d["reorder"] = reordering_name(o.reorder);
  d["threads"] = o.threads;
  d["pattern_values"] = o.matrix_market.pattern_values == PatternValues::ones ? "ones" : "random";
  d["seed"] = o.matrix_market.seed;
  return d;
}

nb::dict report_dict(const PlanReport& r) {
  nb::dict d;
  d["kernel"] = kernel_name(r.kernel);
  d["n"] = r.n;
  d["precision"] = precision_name(r.precision);
  d["input"] = input_type_name(r.input);
  d["tile_bands"] = r.tile_bands;
  d["csr_bands"] = r.csr_bands;
  d["vector_bands"] = r.vector_bands;
  d["vector_nnz"] = r.vector_nnz;
  d["vector_bytes"] = r.vector_bytes;
  d["sparse24_tiles"] = r.sparse24_tiles;
  d["dense_tiles"] = r.dense_tiles;
  d["sparse24_nnz"] = r.sparse24_nnz;
  d["dense_nnz"] = r.dense_nnz;
  d["csr_nnz"] = r.csr_nnz;
  d["sparse24_bytes"] = r.sparse24_bytes;
  d["dense_bytes"] = r.dense_bytes;
  d["csr_bytes"] = r.csr_bytes;
  d["split_bands"] = r.split_bands;
  d["split_parts"] = r.split_parts;
  d["tile_stages"] = r.tile_stages;
  d["deep_tile_pipeline"] = r.deep_tile_pipeline;
  d["empty_bands"] = r.empty_bands;
  d["band_groups"] = r.band_groups;
  d["band_group_steps"] = r.band_group_steps;
  d["csr_long_rows"] = r.csr_long_rows;
  d["csr_long_blocks"] = r.csr_long_blocks;
  d["csr_split_rows"] = r.csr_split_rows;
  d["csr_medium_rows"] = r.csr_medium_rows;
  d["csr_short_tiles"] = r.csr_short_tiles;
  d["csr_chunks"] = r.csr_chunks;
  d["csr_nz_lanes"] = r.csr_nz_lanes;
  d["predicted_us"] = r.predicted_us;
  d["tiles_only_us"] = r.tiles_only_us;
  d["csr_only_us"] = r.csr_only_us;
  d["reason"] = r.reason;
  // How an automatic plan was chosen (docs/API.md, "Measured plans"): the candidates it chose from, in measuring
  // order, each with the model's time and its median (-1: not measured).
  d["tuning"] = tuning_name(r.tuning);
  d["tuning_reason"] = r.tuning_reason;
  d["tuning_ms"] = r.tuning_ms;
  d["tuning_budget_ms"] = r.tuning_budget_ms;
  d["tuning_budget_source"] = r.tuning_budget_source;
  d["tuning_batch"] = r.tuning_batch;
  d["tuning_drafting_ms"] = r.tuning_drafting_ms;
  d["tuning_building_ms"] = r.tuning_building_ms;
  d["tuning_loading_ms"] = r.tuning_loading_ms;
  d["tuning_setup_ms"] = r.tuning_setup_ms;
  d["tuning_warmup_ms"] = r.tuning_warmup_ms;
  d["tuning_timing_ms"] = r.tuning_timing_ms;
  nb::list candidates;
  for (const PlanCandidate& c : r.candidates) {
    nb::dict x;
    x["description"] = c.description;
    x["predicted_us"] = c.predicted_us;
    x["measured_us"] = c.measured_us;
    x["runs"] = c.runs;
    x["build_ms"] = c.build_ms;
    x["chosen"] = c.chosen;
    x["note"] = c.note;
    candidates.append(x);
  }
  d["candidates"] = candidates;
  return d;
}

nb::dict device_info_dict(const DeviceInfo& info) {
  nb::dict d;
  d["available"] = info.available;
  d["name"] = info.name;
  d["compute_capability"] = info.compute_capability;
  d["multiprocessors"] = info.multiprocessors;
  d["l2_bytes"] = info.l2_bytes;
  d["global_memory_bytes"] = info.global_memory_bytes;
  d["reason"] = info.reason;
  return d;
}

}  // namespace bcsr24::python
