// bench_spmm's printed rows besides the timings (bench_spmm_rows.hpp).
#include "bench_spmm_rows.hpp"

#include <cstdio>
#include <filesystem>
#include <string>

#include "bcsr24/error.hpp"
#include "bcsr24_experimental/plan_knobs.hpp"
#include "cli.hpp"

namespace bcsr24::bench_spmm {

void print_matrix_summary(const bench::CopyBandwidth& copy, const std::string& name, const CsrMatrix& csr,
                          double prep_s, const SparseOperator& op) {
  const TileCensus& census = op.census();
  const LayoutReport& layout_report = op.layout_report();
  const Fp16Scaling& scaling = op.scaling();
  if (copy.bytes_per_s > 0)
    std::printf("copy bandwidth: %.0f GB/s (cudaMemcpy device to device, 2 x %zu MiB, median of %d, bytes read + "
                "written%s%s)\n",
                copy.bytes_per_s * 1e-9, copy.buffer_bytes >> 20, copy.runs, copy.note.empty() ? "" : "; ",
                copy.note.c_str());
  else
    std::printf("copy bandwidth: not measured (%s)\n", copy.note.c_str());
  std::printf("matrix: %s  %d x %d  nnz %lld  (read+convert %.2f s)\n", name.c_str(), csr.rows, csr.cols,
              static_cast<long long>(csr.nnz()), prep_s);
  std::printf("precision: %s; rows scaled by 2^%d .. 2^%d; %lld values flushed (largest %.2e of its row's "
              "largest); stored A relative error max %.2e, Frobenius %.2e\n",
              precision_name(op.precision()), scaling.min_row_exponent, scaling.max_row_exponent,
              static_cast<long long>(scaling.flushed_count), scaling.max_flushed_relative, scaling.max_relative_error,
              scaling.frobenius_relative_error);
  std::printf("tiles: %lld dense, %lld 2:4 (%.1f%%), %lld zero; %.1f nnz/tile; lists %.1f MiB; scale 2^%d\n",
              static_cast<long long>(census.dense_tiles), static_cast<long long>(census.sparse24_tiles),
              100.0 * census.sparse24_share(), static_cast<long long>(census.zero_tiles), census.nnz_per_tile(),
              double(census.sparse24_bytes + census.dense_bytes) / (1 << 20), scaling.exponent);
  std::printf("layout: %s, %s (%s); thesis layout: %lld tiles, %.1f%% 2:4, %.1f MiB; preprocessing %.3f s "
              "(reorder %.3f s, baseline count %.3f s, build %.3f s)\n",
              layout_name(census.layout), reordering_name(census.reordering), layout_report.reason.c_str(),
              static_cast<long long>(layout_report.baseline_stored_tiles),
              layout_report.baseline_stored_tiles > 0
                  ? 100.0 * double(layout_report.baseline_sparse24_tiles) / double(layout_report.baseline_stored_tiles)
                  : 0.0,
              double(layout_report.baseline_bytes) / (1 << 20), layout_report.total_seconds,
              layout_report.reorder_seconds, layout_report.baseline_seconds, layout_report.pack_seconds);
}

std::string plan_summary(const PlanReport& r) {
  const experimental::PlanDiagnostics& d = r.diagnostics;
  std::string text = std::to_string(r.tile_bands) + " tile bands, " + std::to_string(r.csr_bands) + " CSR bands";
  if (r.vector_bands > 0) text += ", " + std::to_string(r.vector_bands) + " vector bands";
  if (d.band_groups > 0) text += ", " + std::to_string(d.band_groups) + " band groups";
  if (d.split_bands > 0) text += ", " + std::to_string(d.split_bands) + " split";
  if (d.deep_tile_pipeline) text += ", deep pipeline";
  text += std::string("; ") + tuning_name(r.tuning);
  for (const experimental::PlanCandidate& c : d.candidates)
    if (c.chosen) text += ": " + c.description;
  for (char& ch : text)
    if (ch == '"') ch = '\'';
  return text;
}

void print_plan_row(std::int32_t n, const std::string& method, const PlanReport& r) {
  const experimental::PlanDiagnostics& d = r.diagnostics;
  const double nnz = double(std::max<std::int64_t>(1, r.sparse24_nnz + r.dense_nnz + r.csr_nnz + r.vector_nnz));
  const std::int64_t tiles = std::max<std::int64_t>(1, d.sparse24_tiles + d.dense_tiles);
  char pipeline[160];
  if (d.band_groups > 0)
    std::snprintf(pipeline, sizeof pipeline, "%d band groups (%d stages per block), %.2f B-block loads per tile",
                  d.band_groups, d.tile_stages, double(d.band_group_steps) / double(tiles));
  else
    std::snprintf(pipeline, sizeof pipeline, "tile pipeline %s (%d stage%s per warp)",
                  d.deep_tile_pipeline ? "deep" : "standard", d.tile_stages, d.tile_stages == 1 ? "" : "s");
  std::printf("| %d | plan of %s | %d bands on tiles (%d split over %d blocks), %d on CSR, %d on vectors: nonzeros "
              "%.1f%% 2:4 tiles, %.1f%% dense tiles, %.1f%% CSR, %.1f%% vectors; %s; %s | | | | | | | | | | |\n",
              n, method.c_str(), r.tile_bands, d.split_bands, d.split_parts, r.csr_bands, r.vector_bands,
              100.0 * r.sparse24_nnz / nnz, 100.0 * r.dense_nnz / nnz, 100.0 * r.csr_nnz / nnz,
              100.0 * r.vector_nnz / nnz, pipeline, r.reason.c_str());
}

void print_tuning_row(std::int32_t n, const std::string& method, const PlanReport& r) {
  const experimental::PlanDiagnostics& d = r.diagnostics;
  if (r.tuning_reason.empty() && d.candidates.empty()) return;
  std::string list;
  for (std::size_t i = 0; i < d.candidates.size(); ++i) {
    const experimental::PlanCandidate& c = d.candidates[i];
    char item[400];
    if (c.measured_us >= 0)
      std::snprintf(item, sizeof item, "%s%zu. %s%s: predicted %.1f us, measured %.1f us (%d runs, built in %.2f ms)%s%s",
                    i ? "; " : "", i + 1, c.chosen ? "[chosen] " : "", c.description.c_str(), c.predicted_us,
                    c.measured_us, c.runs, c.build_ms, c.note.empty() ? "" : ", ", c.note.c_str());
    else
      std::snprintf(item, sizeof item, "%s%zu. %s%s: predicted %.1f us, %s", i ? "; " : "", i + 1,
                    c.chosen ? "[chosen] " : "", c.description.c_str(), c.predicted_us,
                    c.note.empty() ? "not measured" : c.note.c_str());
    list += item;
  }
  char budget[320] = "";
  if (r.tuning_budget_ms > 0)
    std::snprintf(budget, sizeof budget, " of a budget of %.1f ms (%s)", r.tuning_budget_ms,
                  r.tuning_budget_source.c_str());
  char batch[64] = "";
  if (d.tuning_batch > 1) std::snprintf(batch, sizeof batch, ", %d products per timed run", d.tuning_batch);
  std::printf("| %d | tuning of %s | %s, %.1f ms%s (drafts %.2f, builds %.2f, loading %.2f, setup %.2f, warm-up %.2f, "
              "timed runs %.2f ms%s): %s%s%s | | | | | | | | | | |\n",
              n, method.c_str(), tuning_name(r.tuning), r.tuning_ms, budget, d.tuning_drafting_ms, d.tuning_building_ms,
              d.tuning_loading_ms, d.tuning_setup_ms, d.tuning_warmup_ms, d.tuning_timing_ms, batch,
              r.tuning_reason.c_str(), list.empty() ? "" : "; ", list.c_str());
}

std::ofstream open_csv(const std::string& path) {
  // The CSV's columns: rows are appended to a file of the same columns only (a file an older bench_spmm wrote has
  // fewer; readers take the columns by name from the header).
  const std::string csv_header =
      "matrix,rows,cols,nnz,n,method,median_ms,min_ms,max_ms,tflops_thesis,tflops_useful,bandwidth_gbs,"
      "floor_fraction,rel_error,dense_tiles,sparse24_tiles,zero_tiles,sparse24_share,device,layout,"
      "predicted_us,tuning_ms,plan,plan_bytes,plan_gbs,copy_fraction,copy_gbs,tuning_budget_ms";
  std::ofstream csv;
  if (path.empty()) return csv;
  const bool new_csv = !std::filesystem::exists(path) || std::filesystem::file_size(path) == 0;
  if (!new_csv) {
    std::ifstream existing(path);
    std::string first_line;
    std::getline(existing, first_line);
    if (first_line != csv_header)
      throw apps::UsageError("--csv " + path + " has other columns (written by another version of "
                             "bench_spmm?); give a new file");
  }
  csv.open(path, std::ios::app);
  if (!csv) throw Error("cannot open " + path);
  if (new_csv) csv << csv_header << '\n';
  return csv;
}

}  // namespace bcsr24::bench_spmm
