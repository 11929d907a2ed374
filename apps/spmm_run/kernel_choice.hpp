// Which of the kernels --kernel asks for apply to the matrix's precision and the output type, and why the others
// do not: --kernel all runs what applies and reports the rest instead of stopping at the first that cannot run.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "bcsr24/precision.hpp"
#include "bcsr24/spmm_plan.hpp"

namespace bcsr24::spmm_run {

/// Why no kernel can multiply a matrix stored in `precision` with B in that precision's type (fp16 for fp16, fp32
/// otherwise, as spmm_run gives it) into C of the requested type; empty when they can (every kernel has the same
/// preconditions: those SparseOperator::make_plan documents for its InvalidArgument).
std::string kernel_obstacle(Precision precision, bool fp16_output);

struct KernelChoice {
  std::string requested;  ///< --kernel: a kernel's name or "all"
  std::vector<KernelKind> applicable;
  std::vector<std::pair<KernelKind, std::string>> not_applicable;  ///< with the reason
};

/// @throw apps::UsageError when no requested kernel applies (a single kernel that does not, or --fp16-out with a
///        matrix not stored in fp16), naming the reason.
KernelChoice choose_kernels(const std::string& requested, Precision precision, bool fp16_output);

}  // namespace bcsr24::spmm_run
