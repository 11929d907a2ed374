// The text reports of bcsr24_solve's block-solver and baseline runs on stdout, the comparison of the runs of one
// process, and what the reports say of the inner matrix. Their JSON: solve_json.hpp.
#pragma once

#include <vector>

#include "bcsr24/sparse_operator.hpp"
#include "block_runs.hpp"

namespace bcsr24::solver {

/// Bytes of A one product reads: the two tile lists for bcsr24, and CSR with fp32 values for cuSPARSE. A is the
/// bulk of a product's memory traffic for small k, so their ratio is the first suitability indicator.
double bcsr24_bytes(const SparseOperator& op);
double csr_f32_bytes(const SparseOperator& op);

/// "max true relative residual R (host fp64 check H)", ", max relative error vs X_true E" when the error is known,
/// and the end of the line: the last figures of every run's text report (`reported`: the solver's own).
void print_final_residuals(double reported, const HostCheck& host);
void print_block_report(const BlockRunReport& report);
void print_pcg_report(const PcgRunReport& report);
/// The comparison table and the speedups of the first block run over the others.
void print_comparison(const std::vector<BlockRunReport>& blocks, const std::vector<PcgRunReport>& baselines);

}  // namespace bcsr24::solver
