// spmm_run's input: the matrix read, generated or loaded, converted into a SparseOperator, with the report
// sections that describe it.
#pragma once

#include <optional>
#include <string>

#include "bcsr24/csr_matrix.hpp"
#include "bcsr24/sparse_operator.hpp"
#include "bcsr24_report_json/report_json.hpp"
#include "options.hpp"

namespace bcsr24::spmm_run {

using json = reports::Json;

struct LoadedMatrix {
  std::string name;
  std::string source;  ///< "matrix_market", "b24" or "synthetic"
  /// The matrix as read or generated: the check's reference. Empty for a .b24 input (the reference is then the
  /// stored matrix), and once the single-GPU path has computed the reference (released).
  CsrMatrix original;
  bool has_original = false;
  std::optional<SparseOperator> op;  ///< absent when loaded without converting
  json matrix_json;                  ///< the report's "matrix" section
  json preprocessing_json = json::object();
  json layout_json = json::object();  ///< the layout choice against the thesis baseline (reports::layout_json)
};

/// Reads, generates or loads the matrix, converts it (unless `convert` is false: MPI ranks other than 0 in the
/// distributed mode need only the CSR; then `op` stays empty) and saves it with --save.
LoadedMatrix load_matrix(const Options& options, bool show_progress, bool convert = true);

}  // namespace bcsr24::spmm_run
