// Which requested kernels apply (kernel_choice.hpp).
#include "kernel_choice.hpp"

#include "cli.hpp"

namespace bcsr24::spmm_run {

std::string kernel_obstacle(Precision precision, bool fp16_output) {
  if (precision == Precision::fp16) return {};
  if (fp16_output)
    return std::string("fp16 output needs fp16 A and B; this matrix is stored in ") + precision_name(precision);
  return {};
}

KernelChoice choose_kernels(const std::string& requested, Precision precision, bool fp16_output) {
  KernelChoice choice;
  choice.requested = requested;
  const std::vector<KernelKind> kernels =
      requested == "all" ? all_kernels() : std::vector<KernelKind>{kernel_from_name(requested)};
  for (const KernelKind kernel : kernels) {
    const std::string obstacle = kernel_obstacle(precision, fp16_output);
    if (obstacle.empty()) choice.applicable.push_back(kernel);
    else choice.not_applicable.emplace_back(kernel, obstacle);
  }
  if (choice.applicable.empty())
    throw apps::UsageError(requested == "all" ? "no kernel applies: " + choice.not_applicable.front().second
                                              : "--kernel " + requested + " does not apply: " +
                                                    choice.not_applicable.front().second);
  return choice;
}

}  // namespace bcsr24::spmm_run
