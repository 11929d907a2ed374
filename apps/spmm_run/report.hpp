// spmm_run's report: the JSON sections and their text form (docs/SPMM_RUN.md documents both).
#pragma once

#include <optional>
#include <string>
#include <utility>

#include "bcsr24_testkit/metrics.hpp"
#include "check_reference.hpp"
#include "kernel_choice.hpp"
#include "load.hpp"
#include "text_report.hpp"

namespace bcsr24::spmm_run {

/// A kernel whose relative Frobenius error exceeds this fails the run: far above any fp16 rounding effect
/// (u16 = 4.9e-4), so crossing it means a wrong result, not imprecision.
inline constexpr double kFailRelativeError = 1e-2;

/// The matrix sections (matrix, census, layout, suitability, scaling, preprocessing) into `report`, printed too
/// unless --json.
void report_matrix(const Options& options, const LoadedMatrix& loaded, json& report);
/// The "check" section: which rows the reference covers and how they were drawn, its cost and the expected
/// errors (printed too unless --json). fp16_output: which expectation the text quotes.
void report_check(const Options& options, const Reference* reference, bool reference_is_original, bool fp16_output,
                  json& report);
/// The "kernels" section: what was asked for, what applies, what does not and why (printed when some kernel
/// does not apply, unless --json).
void report_kernels(const Options& options, const KernelChoice& choice, json& report);

/// The check fields of a result: rel_error, its expectation and whether it is within the bound.
void add_error_fields(json& result, double rel_error, const ErrorExpectation& expectation);
/// One row of the results table.
json result_json(const std::string& kernel, const std::string& device, const bench::Timings& timings,
                 const SpmmCost& cost, bool floor_applies, std::optional<double> rel_error,
                 const ErrorExpectation* expectation);
/// The physical-limit fields of a GPU result: the DRAM bytes its plan moves per product (plan_dram_bytes), the rate
/// that is at the median time, and its share of the device's measured copy bandwidth (`copy_bytes_per_s`, 0 = not
/// measured: the share stays null).
void add_plan_traffic(json& result, double plan_bytes, double copy_bytes_per_s);
/// The "rel.error" and "check" columns of a result: the error (or "not run", "NaN/inf") and the verdict.
std::pair<std::string, std::string> error_and_verdict(const json& result);
/// Above kFailRelativeError, or not finite.
bool result_failed(const json& result);

void print_results_header();
void print_result(const json& result);
/// The "plan" lines of one kernel: where its nonzeros and bytes go, and how it was chosen (print_tuning).
void print_plan(const std::string& kernel, const json& plan);
/// The "tuning" lines of a plan (reports::plan_json): measured or by the model, why, the time and budget, and every
/// candidate's predicted and measured time (nothing where a plan had nothing to choose).
void print_tuning(const json& plan);

}  // namespace bcsr24::spmm_run
