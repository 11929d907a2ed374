// Runs one kernel on the GPU and checks it against Eigen's float64 product (shared by the GPU tests).
#pragma once

#include <cstdint>
#include <vector>

#include "bcsr24/csr_matrix.hpp"
#include "bcsr24/half.hpp"
#include "bcsr24/precision.hpp"
#include "bcsr24/spmm_plan.hpp"
#include "bcsr24_testkit/product_bounds.hpp"
#include "device/plan_access.hpp"
#include "format/bcsr24_matrix.hpp"

namespace bcsr24::test {

/// A product to run and check: width, scalars, operand layout and seed. It is the PlanKnobs of its plan too, so
/// that a knob is declared once (in PlanKnobs) and a case passes straight to make_plan.
struct GpuCase : PlanKnobs {
  std::int32_t n = 8;
  double alpha = 1.0;
  double beta = 0.0;
  std::int64_t ldb_pad = 0;       ///< ldb = n + ldb_pad
  std::int64_t ldc_pad = 0;       ///< ldc = n + ldc_pad
  std::int64_t b_offset = 0;      ///< B starts this many fp16 past an aligned allocation (0 = aligned)
  ElementType output = ElementType::f32;
  std::uint64_t seed = 1;
  int runs = 1;                   ///< runs of the same plan (C poisoned again before each); the last is checked
  int addends = 0;                ///< OutputAddends of the run (0 .. 2): random fp32 D_t, the first with ld = n + 3
};

struct GpuCheck {
  std::int64_t checked = 0;      ///< outputs compared
  std::int64_t violations = 0;   ///< outputs outside the fp16-derived bound (or non-finite)
  double max_ratio = 0.0;        ///< max |error| / bound
  double rel_error = 0.0;        ///< ||C - ref||_F / ||ref||_F
  double output_norm = 0.0;      ///< ||C||_F: a kernel writing nothing cannot pass
  std::vector<float> c;          ///< the kernel's output (rows x ldc, as float)
  std::vector<float> c_initial;  ///< C as uploaded before the run (rows x ldc, as float)
  std::vector<std::int32_t> violating_rows;  ///< rows of C with a violation, ascending (for the failure message)
  std::int32_t first_bad_col = -1, last_bad_col = -1;  ///< columns of C with a violation, lowest and highest
};

/// A case of width n whose operands come from seed + n: each width of a loop over widths gets its own B and C.
GpuCase width_case(std::int32_t n, std::uint64_t seed);

/// The matrix on the device with every list every kernel needs (the all-dense list, CSR rows of every band).
DeviceMatrix upload_all(const Bcsr24Matrix& host);
/// The cost model's plan (Tuning::model, whatever `options` say) on an uploaded matrix, with the experimental
/// knobs: the plan whose choices the tests check. Measured plans are made through SparseOperator (test_tuner.cpp).
SpmmPlan make_plan(const DeviceMatrix& dev, std::int32_t n, KernelKind kernel = KernelKind::automatic,
                   const PlanOptions& options = {}, const PlanKnobs& knobs = {});

/// Converts nothing: `host` must be convert_to_bcsr24(a). Runs `kernel` (cfg.runs times) on `dev` with B random fp16 and
/// C poisoned (NaN when beta == 0, random otherwise), copies C back and compares every output element.
GpuCheck run_and_check(const CsrMatrix& a, const Bcsr24Matrix& host, const DeviceMatrix& dev, KernelKind kernel,
                       const GpuCase& cfg);

/// True when two outputs are bit-identical (the plans promise the same bits from run to run).
bool same_bits(const std::vector<float>& x, const std::vector<float>& y);

/// Catch2 checks of a GpuCheck: outputs were compared, none was outside its bound, and C is not all zero.
void require_pass(const GpuCheck& r);

/// The error bounds of each precision mode live in the testkit (bcsr24_testkit/product_bounds.hpp), shared with
/// the soak program.
using bcsr24::check_mode_product;
using bcsr24::mode_arithmetic;
using bcsr24::ModeArithmetic;
using bcsr24::ModeCheck;

/// B as a plan is given it: `b` itself where `f32`, else rounded to the matrix's 16-bit type (bf16 for a bf16
/// matrix, fp16 otherwise) in `b16`; `exact` is that B in double.
struct GivenB {
  std::vector<fp16_t> b16;
  std::vector<double> exact;
};
GivenB given_b(const std::vector<float>& b, bool f32, Precision precision);

/// Runs `plan` once on the device with B (`b` where `f32`, else given.b16; ldb = n) and C = c0 (fp32, ldc = n),
/// copies C back and checks it against the float64 product of the original `a` with given.exact within the bound
/// of `arithmetic` (check_mode_product, rows' exponents from `host`).
ModeCheck run_mode_product(const CsrMatrix& a, const Bcsr24Matrix& host, const SpmmPlan& plan, std::int32_t n,
                           bool f32, const std::vector<float>& b, const GivenB& given, const std::vector<float>& c0,
                           double alpha, double beta, const ModeArithmetic& arithmetic);

}  // namespace bcsr24::test
