// bench_spmm's printed rows besides the timings: the matrix and device up front, a plan and its tuning under auto's
// timings, a plan in a few words for the CSV, and the CSV file itself.
#pragma once

#include <cstdint>
#include <fstream>
#include <string>

#include "bcsr24/csr_matrix.hpp"
#include "bcsr24/device.hpp"
#include "bcsr24/sparse_operator.hpp"
#include "gpu_timing.hpp"

namespace bcsr24::bench_spmm {

/// The lines before the table: the copy bandwidth, the matrix, its precision and scaling, its tiles and layout.
void print_matrix_summary(const bench::CopyBandwidth& copy, const std::string& name, const CsrMatrix& csr,
                          double prep_s, const SparseOperator& op);
/// A plan in a few words for the CSV (no double quotes): what runs where, and how it was chosen.
std::string plan_summary(const PlanReport& r);
/// The "| n | plan of auto | ..." row: how the automatic plan splits the work.
void print_plan_row(std::int32_t n, const std::string& method, const PlanReport& r);
/// The "| n | tuning of auto | ..." row of a measured plan: how it was chosen, and every candidate's predicted and
/// measured time. Nothing for a plan the cost model made without being asked to measure.
void print_tuning_row(std::int32_t n, const std::string& method, const PlanReport& r);
/// --csv: the file, opened to append (its header written when new); not open without a path.
/// @throw apps::UsageError for an existing file of other columns; Error when it cannot be opened.
std::ofstream open_csv(const std::string& path);

}  // namespace bcsr24::bench_spmm
