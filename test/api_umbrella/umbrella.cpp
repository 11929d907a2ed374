// Compiled with nothing but the umbrella header and libbcsr24's public include directory: every public type and
// entry point of the core library must be reachable from <bcsr24/bcsr24.hpp> alone. Run, it builds an operator on
// the CPU, multiplies with the reference and checks one value, so the names are used, not only declared.
#include <bcsr24/bcsr24.hpp>

#include <cmath>
#include <cstdio>
#include <type_traits>
#include <vector>

namespace {

// Every public type of the core library, by name (a type missing from the umbrella fails to compile here).
template <typename... T>
constexpr bool all_complete() {
  return ((sizeof(T) > 0) && ...);
}
static_assert(all_complete<bcsr24::Error, bcsr24::InvalidArgument, bcsr24::NotSupported, bcsr24::SizeLimitError,
                           bcsr24::OutOfMemory, bcsr24::ParseError, bcsr24::RangeError, bcsr24::CudaError,
                           bcsr24::Precision, bcsr24::fp16_t, bcsr24::CsrMatrix, bcsr24::MatrixMarketInfo,
                           bcsr24::MatrixMarketOptions, bcsr24::MatrixMarketOptions::PatternValues,
                           bcsr24::ScalingPolicy, bcsr24::TileLayout, bcsr24::Reordering, bcsr24::OperatorOptions,
                           bcsr24::Fp16Scaling, bcsr24::TileCensus, bcsr24::LayoutReport, bcsr24::SparseOperator,
                           bcsr24::Stream, bcsr24::KernelKind, bcsr24::ElementType, bcsr24::Tuning, bcsr24::PlanOptions,
                           bcsr24::PlanReport, bcsr24::OutputAddend, bcsr24::SpmmPlan, bcsr24::DeviceInfo,
                           bcsr24::experimental::PlanDiagnostics, bcsr24::experimental::PlanCandidate>());
static_assert(!std::is_copy_constructible_v<bcsr24::SparseOperator> && std::is_move_constructible_v<bcsr24::SparseOperator>,
              "an operator owns its device copy: move-only");
static_assert(!std::is_copy_constructible_v<bcsr24::SpmmPlan> && std::is_move_constructible_v<bcsr24::SpmmPlan>,
              "a plan owns its workspace: move-only");

}  // namespace

int main() {
  // 2 x 3: [1 0 2; 0 3 0]
  const std::vector<std::int32_t> row_ptr{0, 2, 3}, col_idx{0, 2, 1};
  const std::vector<double> values{1.0, 2.0, 3.0};
  bcsr24::OperatorOptions options;
  options.layout = bcsr24::layout_from_name("aligned");
  const bcsr24::SparseOperator op =
      bcsr24::SparseOperator::from_csr(2, 3, row_ptr.data(), col_idx.data(), values.data(), options);
  const std::vector<float> b{1.0f, 1.0f, 1.0f};  // 3 x 1
  std::vector<float> c(2, -1.0f);
  bcsr24::reference_spmm(op, 1, b.data(), 1, c.data(), 1, 1.0, 0.0);
  const bcsr24::DeviceInfo device = bcsr24::query_device();
  std::printf("census: %lld stored tiles; C = [%g %g]; device: %s\n",
              static_cast<long long>(op.census().stored_tiles()), double(c[0]), double(c[1]),
              device.available ? device.name.c_str() : device.reason.c_str());
  return (c[0] == 3.0f && c[1] == 3.0f && op.nnz() == 3) ? 0 : 1;
}
