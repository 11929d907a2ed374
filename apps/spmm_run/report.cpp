// spmm_run's report (report.hpp).
#include "report.hpp"

#include <cmath>
#include <cstdio>
#include <iostream>

namespace bcsr24::spmm_run {

namespace {

using bench::format;
using bench::human_bytes;

/// Values of a 16x32 tile (docs/FORMAT.md): the "% of 512" of the census line.
constexpr double kTileValues = 16.0 * 32.0;

/// "layout" lines: what was chosen and why, and the thesis baseline (aligned, file order) beside it.
void print_layout(const json& layout) {
  std::cout << "layout      " << layout["layout"].get<std::string>() << ", rows "
            << (layout["reordering"] == "rcm" ? "reordered by RCM" : "in file order") << " ("
            << layout["reason"].get<std::string>() << ")\n";
  if (!layout.contains("baseline_stored_tiles") || layout["baseline_stored_tiles"].get<std::int64_t>() < 0) return;
  std::cout << "            before (aligned, file order): " << layout["baseline_stored_tiles"] << " tiles, "
            << format("%.1f%%", 100.0 * layout["baseline_sparse24_share"].get<double>()) << " 2:4, "
            << human_bytes(layout["baseline_bytes"].get<double>()) << "\n"
            << "            after:                        " << layout["stored_tiles"] << " tiles, "
            << format("%.1f%%", 100.0 * layout["sparse24_share"].get<double>()) << " 2:4, "
            << human_bytes(layout["bytes"].get<double>()) << " (B-row indices and row map "
            << human_bytes(layout["index_bytes"].get<double>()) << ", "
            << format("%.1f%%", 100.0 * layout["index_share"].get<double>()) << ")\n"
            << "            time: reorder " << format("%.3f s", layout["reorder_seconds"].get<double>())
            << ", baseline count " << format("%.3f s", layout["baseline_seconds"].get<double>()) << ", build "
            << format("%.3f s", layout["pack_seconds"].get<double>()) << ", conversion total "
            << format("%.3f s", layout["total_seconds"].get<double>()) << "\n";
}

void print_matrix(const json& matrix, const json& census) {
  std::cout << "matrix      " << matrix["name"].get<std::string>();
  if (matrix.contains("field"))
    std::cout << " (Matrix Market, " << matrix["field"].get<std::string>() << ", "
              << matrix["symmetry"].get<std::string>() << ")";
  else if (matrix["source"] == "b24")
    std::cout << " (preprocessed .b24)";
  else
    std::cout << (matrix.contains("mesh") ? " (3-D mesh)" : matrix.contains("graph") ? " (random graph)"
                                                                                      : " (synthetic XdYs)");
  std::cout << "\n            " << matrix["rows"] << " x " << matrix["cols"] << ", " << matrix["nnz"] << " nonzeros";
  if (matrix["entries_with_explicit_zeros"] != matrix["nnz"])
    std::cout << " (" << matrix["entries_with_explicit_zeros"] << " entries with explicit zeros)";
  std::cout << ", density " << format("%.3g", matrix["density"].get<double>()) << "\n";

  std::cout << "tiles       16x32: " << census["tile_rows"] << " tile rows x " << census["tile_cols"]
            << " tile columns\n"
            << "            stored " << census["stored_tiles"] << " = " << census["dense_tiles"] << " dense + "
            << census["sparse24_tiles"] << " 2:4 (" << format("%.1f", 100.0 * census["sparse24_share"].get<double>())
            << "% 2:4), zero " << census["zero_tiles"] << "\n"
            << "            " << format("%.1f", census["nnz_per_tile"].get<double>()) << " nonzeros per stored tile ("
            << format("%.1f%%", 100.0 * census["nnz_per_tile"].get<double>() / kTileValues) << " of 512)\n"
            << "            dense list " << human_bytes(census["dense_bytes"].get<double>()) << ", 2:4 list "
            << human_bytes(census["sparse24_bytes"].get<double>()) << "\n"
            << "            " << census["empty_tile_rows"] << " empty tile rows, at most "
            << census["max_tiles_per_tile_row"] << " tiles in one tile row\n";
}

void print_scaling(const json& scaling, const json& preprocessing) {
  std::string label = scaling["precision"].get<std::string>();
  label.resize(12, ' ');
  std::cout << label;
  if (scaling["per_row"].get<bool>())
    std::cout << "rows scaled by 2^" << scaling["min_row_exponent"] << " .. 2^" << scaling["max_row_exponent"]
              << " (products rescaled exactly)";
  else if (scaling["scaled"].get<bool>())
    std::cout << "values scaled by 2^" << scaling["exponent"] << " (products rescaled exactly)";
  else
    std::cout << "no scaling needed";
  std::cout << "; max |a| " << format("%.3g", scaling["max_abs"].get<double>()) << ", min |a| "
            << format("%.3g", scaling["min_abs_nonzero"].get<double>()) << "\n"
            << "            overflow " << scaling["overflow_count"] << ", underflow " << scaling["underflow_count"]
            << ", flushed to zero " << scaling["flushed_count"] << " (largest "
            << format("%.2g", scaling["max_flushed_relative"].get<double>()) << " of its row's largest), subnormal "
            << scaling["subnormal_count"] << "\n"
            << "            stored A against the input: max relative error "
            << format("%.2e", scaling["max_relative_error"].get<double>()) << ", Frobenius "
            << format("%.2e", scaling["frobenius_relative_error"].get<double>()) << "\n";

  std::cout << "preprocess ";
  static const std::pair<const char*, const char*> steps[] = {{"generate_s", "generate"}, {"read_s", "read"},
                                                              {"load_s", "load .b24"}, {"convert_s", "convert"},
                                                              {"save_s", "save .b24"}};
  for (const auto& [key, label] : steps)
    if (preprocessing.contains(key)) std::cout << " " << label << " " << format("%.3f s", preprocessing[key].get<double>());
  std::cout << "\n";
}

}  // namespace

void report_matrix(const Options& options, const LoadedMatrix& loaded, json& report) {
  const SparseOperator& op = *loaded.op;
  const TileCensus& census = op.census();
  report["matrix"] = loaded.matrix_json;
  report["census"] = reports::census_json(census);
  report["layout"] = loaded.layout_json;
  const TileSuitability suitability = tile_suitability(census, op.rows());
  report["suitability"] = {{"tile_bytes", suitability.tile_bytes},
                           {"csr_f16_bytes", suitability.csr_f16_bytes},
                           {"byte_ratio", suitability.ratio},
                           {"suits_tiles", suitability.suits_tiles}};
  // Where the scaling came from (the command line's policy) first, then the library's report.
  report["scaling"] = {{"policy", loaded.source == "b24" ? "from .b24" : options.storage.scaling}};
  report["scaling"].update(reports::scaling_json(op.scaling()));
  report["scaling"]["precision"] = precision_name(op.precision());
  report["preprocessing"] = loaded.preprocessing_json;
  if (options.json_output) return;
  print_matrix(report["matrix"], report["census"]);
  print_scaling(report["scaling"], report["preprocessing"]);
  print_layout(report["layout"]);
  std::cout << "suitability tile lists " << human_bytes(suitability.tile_bytes) << " vs CSR fp16 "
            << human_bytes(suitability.csr_f16_bytes) << " (" << format("%.1f", suitability.ratio) << "x)"
            << (suitability.suits_tiles
                    ? "\n"
                    : ": too few nonzeros per tile for the tensor-core path; cuSPARSE CSR is likely faster here\n");
}

void report_check(const Options& options, const Reference* reference, bool reference_is_original, bool fp16_output,
                  json& report) {
  json check = {{"enabled", options.check},
                {"reference", reference_is_original ? "original matrix" : "stored (decoded) matrix"},
                {"fail_above", kFailRelativeError}};
  if (reference) {
    const CheckRows& rows = reference->checked;
    check["rows"] = rows.full ? "all" : "sampled";
    check["checked_rows"] = static_cast<std::int64_t>(rows.rows.size());
    if (!rows.full) {
      check["sampled_rows"] = static_cast<std::int64_t>(rows.rows.size());
      check["sample"] = {{"uniform", rows.uniform}, {"seed", rows.seed},     {"longest", rows.longest},
                         {"ends", rows.ends},       {"too_long", rows.too_long}};
    }
    check["description"] = rows.description;
    check["host_bytes"] = reference->host_bytes;
    check["peak_rss_growth_bytes"] =
        reference->peak_rss_growth_bytes >= 0 ? json(reference->peak_rss_growth_bytes) : json(nullptr);
    check["reference_s"] = reference->seconds;
    check["f32_output"] = {{"expected_rel_error", reference->f32_output.typical},
                           {"rel_error_bound", reference->f32_output.bound}};
    check["f16_output"] = {{"expected_rel_error", reference->f16_output.typical},
                           {"rel_error_bound", reference->f16_output.bound}};
  }
  report["check"] = check;
  if (options.json_output) return;
  std::cout << "check       ";
  if (!reference) {
    std::cout << "off (--no-check)\n";
    return;
  }
  std::cout << "fp64 reference of the " << check["reference"].get<std::string>() << ": "
            << reference->checked.description << " (" << format("%.2f s", reference->seconds) << ", "
            << human_bytes(double(reference->host_bytes)) << " of host memory)\n"
            << "            fp16-derived relative error: typical "
            << format("%.1e", reference->expectation(fp16_output).typical) << ", bound "
            << format("%.1e", reference->expectation(fp16_output).bound) << "; a kernel fails above "
            << format("%.0e", kFailRelativeError) << "\n";
}

void report_kernels(const Options& options, const KernelChoice& choice, json& report) {
  json applicable = json::array(), not_applicable = json::array();
  for (const KernelKind kernel : choice.applicable) applicable.push_back(kernel_name(kernel));
  for (const auto& [kernel, reason] : choice.not_applicable)
    not_applicable.push_back({{"kernel", kernel_name(kernel)}, {"reason", reason}});
  report["kernels"] = {{"requested", choice.requested}, {"applicable", applicable}, {"not_applicable", not_applicable}};
  if (options.json_output || choice.not_applicable.empty()) return;
  std::cout << "kernels     " << choice.requested << ": not applicable";
  for (const auto& [kernel, reason] : choice.not_applicable) std::cout << "; " << kernel_name(kernel) << " (" << reason << ")";
  std::cout << "\n";
}

void add_error_fields(json& result, double rel_error, const ErrorExpectation& expectation) {
  // JSON has no NaN: a NaN error (poisoned C left unwritten) is reported as null with a flag.
  if (std::isfinite(rel_error)) result["rel_error"] = rel_error;
  else result["rel_error_not_finite"] = true;
  result["expected_rel_error"] = expectation.typical;
  result["rel_error_bound"] = expectation.bound;
  result["within_bound"] = rel_error <= expectation.bound;
}

json result_json(const std::string& kernel, const std::string& device, const bench::Timings& timings,
                 const SpmmCost& cost, bool floor_applies, std::optional<double> rel_error,
                 const ErrorExpectation* expectation) {
  const double seconds = timings.median_ms * 1e-3;
  json result = {{"kernel", kernel},
                 {"device", device},
                 {"median_ms", timings.median_ms},
                 {"min_ms", timings.min_ms},
                 {"max_ms", timings.max_ms},
                 {"tflops_thesis", cost.thesis_flops / seconds * 1e-12},
                 {"tflops_useful", cost.useful_flops / seconds * 1e-12},
                 {"bandwidth_gbs", cost.min_bytes / seconds * 1e-9},
                 {"floor_fraction", nullptr},
                 {"plan_bytes", nullptr},
                 {"plan_gbs", nullptr},
                 {"copy_fraction", nullptr},
                 {"rel_error", nullptr},
                 {"expected_rel_error", nullptr},
                 {"rel_error_bound", nullptr},
                 {"within_bound", nullptr}};
  // The memory floor is a GPU figure (kReferenceBandwidth); it says nothing about the CPU path.
  if (floor_applies) result["floor_fraction"] = (cost.min_bytes / kReferenceBandwidth) / seconds;
  if (rel_error && expectation) add_error_fields(result, *rel_error, *expectation);
  return result;
}

void add_plan_traffic(json& result, double plan_bytes, double copy_bytes_per_s) {
  const double seconds = result["median_ms"].get<double>() * 1e-3;
  result["plan_bytes"] = plan_bytes;
  if (!(seconds > 0)) return;
  result["plan_gbs"] = plan_bytes / seconds * 1e-9;
  if (copy_bytes_per_s > 0) result["copy_fraction"] = plan_bytes / seconds / copy_bytes_per_s;
}

std::pair<std::string, std::string> error_and_verdict(const json& result) {
  std::string error = "not run", verdict;
  if (result.value("rel_error_not_finite", false)) {
    error = "NaN/inf";
    verdict = "FAILED";
  } else if (result["rel_error"].is_number()) {
    const double rel_error = result["rel_error"].get<double>();
    error = format("%.2e", rel_error);
    if (rel_error > kFailRelativeError)
      verdict = "FAILED (> 1e-2)";
    else
      verdict = std::string(result["within_bound"].get<bool>() ? "ok" : "ABOVE fp16 bound") + " (typical " +
                format("%.1e", result["expected_rel_error"].get<double>()) + ", bound " +
                format("%.1e", result["rel_error_bound"].get<double>()) + ")";
  }
  return {error, verdict};
}

bool result_failed(const json& result) {
  if (result.value("rel_error_not_finite", false)) return true;
  return result["rel_error"].is_number() && !(result["rel_error"].get<double>() <= kFailRelativeError);
}

void print_results_header() {
  std::printf("%-18s %10s %10s %10s %9s %9s %9s %8s %9s %9s %7s %10s  %s\n", "kernel", "median ms", "min ms",
              "max ms", "TFLOPS", "useful", "GB/s", "floor", "plan", "plan", "of", "rel.error", "check");
  std::printf("%-18s %10s %10s %10s %9s %9s %9s %8s %9s %9s %7s\n", "", "", "", "", "(thesis)", "TFLOPS", "(tiles)",
              "(tiles)", "MiB", "GB/s", "copy");
}

void print_result(const json& result) {
  auto number_or_na = [&](const char* key, const char* pattern, double scale) {
    return result[key].is_number() ? format(pattern, scale * result[key].get<double>()) : std::string("n/a");
  };
  const std::string floor = number_or_na("floor_fraction", "%.1f%%", 100.0);
  const std::string plan_mib = number_or_na("plan_bytes", "%.2f", 1.0 / double(1 << 20));
  const std::string plan_gbs = number_or_na("plan_gbs", "%.1f", 1.0);
  const std::string of_copy = number_or_na("copy_fraction", "%.1f%%", 100.0);
  const auto [error, verdict] = error_and_verdict(result);
  std::printf("%-18s %10.4f %10.4f %10.4f %9.4g %9.4g %9.1f %8s %9s %9s %7s %10s  %s\n",
              result["kernel"].get<std::string>().c_str(), result["median_ms"].get<double>(),
              result["min_ms"].get<double>(), result["max_ms"].get<double>(), result["tflops_thesis"].get<double>(),
              result["tflops_useful"].get<double>(), result["bandwidth_gbs"].get<double>(), floor.c_str(),
              plan_mib.c_str(), plan_gbs.c_str(), of_copy.c_str(), error.c_str(), verdict.c_str());
  std::fflush(stdout);
}

void print_plan(const std::string& kernel, const json& plan) {
  auto pct = [](const json& v) { return format("%.1f%%", 100.0 * v.get<double>()); };
  const json& diagnostics = plan["diagnostics"];
  std::cout << "plan        " << kernel << ": " << plan["tile_bands"] << " bands on tiles, " << plan["csr_bands"]
            << " on CSR (" << plan["reason"].get<std::string>() << ")\n"
            << "            nonzeros: 2:4 tiles " << pct(plan["nnz_share"]["sparse24"]) << ", dense tiles "
            << pct(plan["nnz_share"]["dense"]) << ", CSR " << pct(plan["nnz_share"]["csr"])
            << "; bytes of A: 2:4 tiles " << pct(diagnostics["bytes_share"]["sparse24"]) << ", dense tiles "
            << pct(diagnostics["bytes_share"]["dense"]) << ", CSR " << pct(diagnostics["bytes_share"]["csr"]) << "\n";
  if (plan["vector_bands"].get<int>() > 0)
    std::cout << "            narrow vectors: " << plan["vector_bands"] << " bands, " << plan["vector_nnz"]
              << " nonzeros, " << diagnostics["vector_bytes"] << " bytes of A\n";
  if (diagnostics["split_bands"].get<int>() > 0)
    std::cout << "            " << diagnostics["split_bands"] << " long band(s) split over "
              << diagnostics["split_parts"] << " blocks\n";
  if (diagnostics["deep_tile_pipeline"].get<bool>())
    std::cout << "            deep tile pipeline (" << diagnostics["tile_stages"] << " stages per warp)\n";
  if (diagnostics["band_groups"].get<int>() > 0) {
    const double tiles =
        std::max(1.0, diagnostics["sparse24_tiles"].get<double>() + diagnostics["dense_tiles"].get<double>());
    std::cout << "            " << diagnostics["band_groups"] << " band groups of 16 bands, "
              << format("%.2f", diagnostics["band_group_steps"].get<double>() / tiles) << " B-block loads per tile\n";
  }
  print_tuning(plan);
}

void print_tuning(const json& plan) {
  const std::string reason = plan["tuning_reason"].get<std::string>();
  const json& diagnostics = plan["diagnostics"];
  if (reason.empty() && diagnostics["candidates"].empty()) return;
  std::cout << "tuning      " << plan["tuning"].get<std::string>();
  if (plan["tuning_budget_ms"].get<double>() > 0)
    std::cout << " in " << format("%.1f ms", plan["tuning_ms"].get<double>()) << " of a budget of "
              << format("%.1f ms", plan["tuning_budget_ms"].get<double>()) << " ("
              << plan["tuning_budget_source"].get<std::string>() << ")";
  std::cout << ": " << reason << "\n";
  const int products = diagnostics["tuning_batch"].get<int>();
  for (const json& c : diagnostics["candidates"]) {
    const bool measured = c["measured_us"].get<double>() >= 0;
    std::cout << "            " << (c["chosen"].get<bool>() ? "* " : "  ") << c["description"].get<std::string>()
              << ": predicted " << format("%.1f us", c["predicted_us"].get<double>());
    if (measured)
      std::cout << ", measured " << format("%.1f us", c["measured_us"].get<double>()) << " (" << c["runs"]
                << (products > 1 ? " runs of " + std::to_string(products) + " products)" : " runs)");
    const std::string note = c["note"].get<std::string>();
    if (!note.empty()) std::cout << (measured ? "; " : ", ") << note;
    std::cout << "\n";
  }
}

}  // namespace bcsr24::spmm_run
