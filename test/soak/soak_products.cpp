// The soak's GPU products (bcsr24_soak.cpp runs the cases): one case's operator and plans, every product's
// inputs drawn at random, run through the public API and compared with reference_spmm under its mode's bound.
#include "soak_case.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>

#include "bcsr24/bcsr24.hpp"
#include "bcsr24_testkit/product_bounds.hpp"
#include "cuda_memory.hpp"
#include "device/plan_access.hpp"
#include "format/bcsr24_matrix.hpp"
#include "soak_matrices.hpp"

namespace bcsr24::soak {

using bcsr24::test::cuda_ok;
using bcsr24::test::DeviceBytes;

namespace {

/// The B type a plan resolves `input` to on a matrix of `precision` (automatic: the matrix's 16-bit type).
ElementType resolved_input(Precision precision, ElementType input) {
  if (input != ElementType::automatic) return input;
  return precision == Precision::split  ? ElementType::f32
         : precision == Precision::bf16 ? ElementType::bf16
                                        : ElementType::f16;
}

/// Whether make_plan must accept the combination (docs/API.md): the B types each precision takes, fp16 output
/// only with fp16 A and fp16 B; every kernel takes every combination.
bool plan_is_valid(Precision precision, ElementType input, ElementType output) {
  const ElementType b = resolved_input(precision, input);
  const bool b_ok = precision == Precision::fp16   ? (b == ElementType::f16 || b == ElementType::f32)
                    : precision == Precision::bf16 ? (b == ElementType::bf16 || b == ElementType::f32)
                                                   : b == ElementType::f32;
  const bool fp16_pair = precision == Precision::fp16 && b == ElementType::f16;
  return b_ok && (output == ElementType::f32 || fp16_pair);
}

std::int32_t random_n(std::mt19937_64& rng) {
  switch (rng() % 8) {
    case 0: return static_cast<std::int32_t>(uniform(rng, 1, 8));
    case 1: { const std::int32_t edges[] = {1, 7, 8, 9, 16, 31, 33, 64, 127, 128, 129, 255, 256}; return edges[rng() % 13]; }
    case 2: case 3: case 4: return static_cast<std::int32_t>(uniform(rng, 1, 64));
    default: return static_cast<std::int32_t>(uniform(rng, 1, 256));
  }
}

/// One product's inputs: B (as given to the GPU: cols x ldb past an offset, and its exact values), C0.
struct Product {
  std::int32_t n = 0;
  std::int64_t ldb = 0, ldc = 0, b_offset = 0;
  double alpha = 1.0, beta = 0.0;
  bool expect_refusal = false;  // unaligned B to a plan without the workspace
};

/// A product's host inputs: B (its exact values, and as the GPU takes it: fp32 or fp16 bits) and C0 (compact, and at
/// ldc with NaN in the padding columns).
struct HostInputs {
  std::vector<double> b_exact;
  std::vector<float> b32;
  std::vector<fp16_t> b16;
  std::vector<float> c0, c_init;
};

/// Draws B and C0 for `pr`. For fp16 output, pr.alpha is brought down by powers of two until |alpha A B| stays far
/// inside fp16's range.
HostInputs draw_inputs(const SparseOperator& op, bool f32_b, bool f16_c, Product& pr, std::mt19937_64& rng) {
  const std::int32_t rows = op.rows(), cols = op.cols(), n = pr.n;
  const Precision precision = op.precision();
  HostInputs in;
  draw_b(rng, cols, n, f32_b, precision, in.b_exact, in.b32, in.b16);
  if (f16_c && pr.alpha != 0.0) {
    std::vector<float> ab(std::size_t(rows) * std::size_t(n));
    if (precision == Precision::fp16 && !f32_b)
      reference_spmm(op, n, in.b16.data(), n, ab.data(), n, 1.0, 0.0);
    else
      reference_spmm(op, n, in.b32.data(), n, ab.data(), n, 1.0, 0.0);
    double largest = 0.0;
    for (const float v : ab) largest = std::max(largest, double(std::fabs(v)));
    while (std::fabs(pr.alpha) * largest > 8192.0) pr.alpha /= 2.0;
  }
  // C0: NaN wherever the product must not read it (everywhere when beta = 0; the padding columns always).
  in.c0.resize(std::size_t(rows) * std::size_t(n));
  in.c_init.assign(std::size_t(rows) * std::size_t(pr.ldc), std::numeric_limits<float>::quiet_NaN());
  for (std::int32_t i = 0; i < rows; ++i)
    for (std::int32_t j = 0; j < n; ++j) {
      float v = pr.beta == 0.0 ? std::numeric_limits<float>::quiet_NaN() : float(uniform_real(rng, -1.0, 1.0));
      if (f16_c) v = fp16_to_float(float_to_fp16(v));
      in.c0[std::size_t(i) * n + j] = v;
      in.c_init[std::size_t(i) * std::size_t(pr.ldc) + std::size_t(j)] = v;
    }
  return in;
}

/// The device side's bytes: B strided and offset (garbage in the padding), C0 as given (fp16 bits for fp16 output).
void device_images(const HostInputs& in, std::int32_t cols, const Product& pr, bool f32_b, bool f16_c,
                   std::vector<unsigned char>& b_image, std::vector<unsigned char>& c_image) {
  const std::size_t b_elem = f32_b ? 4 : 2, c_elem = f16_c ? 2 : 4;
  b_image.assign(std::size_t(pr.b_offset + std::int64_t(cols) * pr.ldb) * b_elem, 0x7f);
  for (std::int32_t k = 0; k < cols; ++k)
    for (std::int32_t j = 0; j < pr.n; ++j) {
      const std::size_t to = std::size_t(pr.b_offset + std::int64_t(k) * pr.ldb + j) * b_elem;
      const std::size_t from = std::size_t(k) * std::size_t(pr.n) + std::size_t(j);
      if (f32_b) std::memcpy(&b_image[to], &in.b32[from], 4);
      else std::memcpy(&b_image[to], &in.b16[from], 2);
    }
  c_image.resize(in.c_init.size() * c_elem);
  for (std::size_t e = 0; e < in.c_init.size(); ++e) {
    if (f16_c) {
      const fp16_t h = float_to_fp16(in.c_init[e]);
      std::memcpy(&c_image[e * 2], &h, 2);
    } else {
      std::memcpy(&c_image[e * 4], &in.c_init[e], 4);
    }
  }
}

/// What a product's comparison found: the wrong outputs, the first described, and the finite one furthest beyond
/// its bound.
struct Mismatches {
  std::int64_t bad = 0;
  std::string first;
  double worst_ratio = 0.0, worst_error = 0.0;
  std::int32_t worst_i = -1;
  std::int64_t worst_j = -1;
};

/// C as it came back (`out`, rows x ldc) against the reference within each output's bound; the padding columns must
/// be untouched, bit for bit (`c_image`: C as it was given).
Mismatches compare_outputs(const std::vector<unsigned char>& out, const std::vector<unsigned char>& c_image,
                           const std::vector<float>& ref, const ProductBound& pb, std::int32_t rows, std::int32_t n,
                           std::int64_t ldc, bool f16_c, Tally& tally) {
  const std::size_t c_elem = f16_c ? 2 : 4;
  Mismatches m;
  for (std::int32_t i = 0; i < rows; ++i)
    for (std::int64_t j = 0; j < ldc; ++j) {
      const std::size_t e = std::size_t(i) * std::size_t(ldc) + std::size_t(j);
      if (j >= n) {  // padding columns untouched, bit for bit
        if (std::memcmp(&out[e * c_elem], &c_image[e * c_elem], c_elem) != 0 && ++m.bad == 1)
          m.first = "padding column " + std::to_string(j) + " of row " + std::to_string(i) + " written";
        continue;
      }
      double got;
      if (f16_c) {
        fp16_t h;
        std::memcpy(&h, &out[e * 2], 2);
        got = fp16_to_float(h);
      } else {
        float f;
        std::memcpy(&f, &out[e * 4], 4);
        got = f;
      }
      const std::size_t at = std::size_t(i) * std::size_t(n) + std::size_t(j);
      const double want = ref[at];
      const double bound = output_bound(pb.bound[at], want, f16_c);
      const double error = std::fabs(got - want);
      ++tally.outputs;
      tally.nonzero_outputs += got != 0.0;
      if (std::isfinite(got)) tally.max_ratio = std::max(tally.max_ratio, error / bound);
      if (std::isfinite(got) && !(error > bound)) continue;  // within its bound (a NaN bound counts as within)
      if (std::isfinite(got) && error / bound > m.worst_ratio) {
        m.worst_ratio = error / bound;
        m.worst_i = i;
        m.worst_j = j;
        m.worst_error = error;
      }
      if (++m.bad == 1) {
        char text[256];
        std::snprintf(text, sizeof text, "C(%d, %lld) = %.9g, reference %.9g, |error| %.3g > bound %.3g", i,
                      static_cast<long long>(j), got, want, error, bound);
        m.first = text;
      }
    }
  return m;
}

/// Runs one product of `plan` (inputs drawn from `rng`) and checks it; a failure is recorded in `failures`.
void check_product(const SparseOperator& op, const CsrMatrix& stored, const std::vector<std::int32_t>& exponents,
                   const SpmmPlan& plan, Product pr, std::mt19937_64& rng, cudaStream_t stream, Tally& tally,
                   std::vector<Failure>& failures, const std::string& where) {
  const std::int32_t rows = op.rows(), n = pr.n;
  const ElementType input = plan.input();
  const bool f32_b = input == ElementType::f32, f16_c = plan.output() == ElementType::f16;
  const Precision precision = op.precision();
  const HostInputs in = draw_inputs(op, f32_b, f16_c, pr, rng);
  std::vector<unsigned char> b_dev_image, c_image;
  device_images(in, op.cols(), pr, f32_b, f16_c, b_dev_image, c_image);
  DeviceBytes d_b(b_dev_image.size()), d_c(c_image.size());
  cuda_ok(cudaMemcpyAsync(d_b.ptr, b_dev_image.data(), b_dev_image.size(), cudaMemcpyHostToDevice, stream), "copy B");
  cuda_ok(cudaMemcpyAsync(d_c.ptr, c_image.data(), c_image.size(), cudaMemcpyHostToDevice, stream), "copy C");
  cuda_ok(cudaStreamSynchronize(stream), "copies");
  const auto alpha = float(pr.alpha), beta = float(pr.beta);
  try {
    if (f32_b)
      plan.run(reinterpret_cast<const float*>(static_cast<unsigned char*>(d_b.ptr) + pr.b_offset * 4), pr.ldb,
               static_cast<float*>(d_c.ptr), pr.ldc, alpha, beta, stream);
    else
      plan.run(reinterpret_cast<const fp16_t*>(static_cast<unsigned char*>(d_b.ptr) + pr.b_offset * 2), pr.ldb,
               d_c.ptr, pr.ldc, alpha, beta, stream);
  } catch (const InvalidArgument& e) {
    if (!pr.expect_refusal) throw;
    tally.refuse("run: unaligned B without the workspace");
    return;
  }
  if (pr.expect_refusal) {
    failures.push_back({where + ": run() accepted unaligned B (offset " + std::to_string(pr.b_offset) + ", ldb " +
                        std::to_string(pr.ldb) + ") without allow_unaligned_b"});
    return;
  }
  std::vector<unsigned char> out(c_image.size());
  cuda_ok(cudaMemcpyAsync(out.data(), d_c.ptr, out.size(), cudaMemcpyDeviceToHost, stream), "copy C back");
  cuda_ok(cudaStreamSynchronize(stream), "product");
  ++tally.products;

  // The reference (on the stored matrix, in double, rounded to float once) and the mode's bound.
  std::vector<float> ref(in.c0);
  if (precision == Precision::fp16 && !f32_b)
    reference_spmm(op, n, in.b16.data(), n, ref.data(), n, alpha, beta);
  else
    reference_spmm(op, n, in.b32.data(), n, ref.data(), n, alpha, beta);  // bf16 B widened exactly
  const ProductBound pb = product_bound(stored, n, in.b_exact, in.c0, alpha, beta, exponents,
                                        stored_matrix_arithmetic(precision, input), kExtraTerms);
  const Mismatches m = compare_outputs(out, c_image, ref, pb, rows, n, pr.ldc, f16_c, tally);
  if (m.bad > 0)
    failures.push_back({where + ", n " + std::to_string(n) + ", ldb " + std::to_string(pr.ldb) + " (+" +
                        std::to_string(pr.b_offset) + "), ldc " + std::to_string(pr.ldc) + ", alpha " +
                        std::to_string(pr.alpha) + ", beta " + std::to_string(pr.beta) + ": " + std::to_string(m.bad) +
                        " outputs wrong; first: " + m.first +
                        (m.worst_i >= 0 ? "; " + explain_output(stored, n, in.b_exact, alpha, m.worst_i, m.worst_j,
                                                                 m.worst_error, m.worst_ratio)
                                        : std::string())});
}

}  // namespace

void run_case(std::uint64_t seed, std::int32_t max_rows, cudaStream_t stream, Tally& tally,
              std::vector<Failure>& failures, bool verbose) {
  std::mt19937_64 rng(seed);
  const soak::RandomMatrix m = soak::random_matrix(rng, max_rows);
  const OperatorOptions options = random_options(rng);
  const std::string matrix = m.name + " (" + std::to_string(m.a.nnz()) + " nonzeros, values " + m.values + ")";
  const std::string config = std::string(precision_name(options.precision)) + ", layout " +
                             layout_name(options.layout) + ", reorder " + reordering_name(options.reorder) +
                             ", scaling " + scaling_policy_name(options.scaling);
  if (verbose) std::printf("case %llx: %s; %s\n", static_cast<unsigned long long>(seed), matrix.c_str(), config.c_str());
  ++tally.cases;
  tally.cover("family " + m.family);
  tally.cover("values " + m.values.substr(0, m.values.find(' ')));
  // ScalingPolicy::none refuses values beyond the stored precision's range (RangeError), and only those.
  const double range_max = options.precision == Precision::bf16 ? kBf16Max : kFp16Max;
  const bool overflows = m.max_abs >= range_max * (1.0 + 0x1p-11);
  std::optional<SparseOperator> op;
  try {
    op.emplace(SparseOperator::from_csr(m.a, options));
  } catch (const RangeError& e) {
    if (options.scaling == ScalingPolicy::none && m.max_abs >= range_max) {
      tally.refuse("from_csr: RangeError under scaling none");
      return;
    }
    failures.push_back({matrix + "; " + config + ": unexpected RangeError: " + e.what()});
    return;
  }
  if (options.scaling == ScalingPolicy::none && overflows) {
    failures.push_back({matrix + "; " + config + ": values up to " + std::to_string(m.max_abs) +
                        " accepted under scaling none"});
    return;
  }
  tally.cover(std::string("layout ") + layout_name(op->census().layout) + " / " + reordering_name(op->census().reordering));
  tally.cover(std::string("scaling ") + scaling_policy_name(options.scaling) + " / " + precision_name(options.precision));
  const CsrMatrix stored = op->stored_csr();
  const std::vector<std::int32_t> exponents = row_exponents(*op);

  const int plans = static_cast<int>(uniform(rng, 1, 4));
  for (int p = 0; p < plans; ++p) {
    const std::vector<KernelKind> kinds = all_kernels();
    const KernelKind kernel = kinds[rng() % kinds.size()];
    PlanOptions po;
    const ElementType inputs[] = {ElementType::automatic, ElementType::automatic, ElementType::f16, ElementType::bf16,
                                ElementType::f32};
    po.input = inputs[rng() % 5];
    po.output = rng() % 4 == 0 ? ElementType::f16 : ElementType::f32;
    po.allow_unaligned_b = rng() % 4 != 0;
    const std::int32_t n = random_n(rng);
    const bool valid = plan_is_valid(op->precision(), po.input, po.output);
    const std::string where = matrix + "; " + config + "; plan " + kernel_name(kernel) + ", B " +
                              element_type_name(resolved_input(op->precision(), po.input)) + ", C " +
                              (po.output == ElementType::f16 ? "fp16" : "fp32") +
                              (po.allow_unaligned_b ? "" : ", no workspace");
    std::optional<SpmmPlan> plan;
    try {
      plan.emplace(op->make_plan(n, kernel, po));
    } catch (const InvalidArgument& e) {
      if (valid) {
        failures.push_back({where + ", n " + std::to_string(n) + ": refused: " + e.what()});
      } else {
        tally.refuse("make_plan: a kernel / B / C combination the precision does not take");
      }
      continue;
    }
    if (!valid) {
      failures.push_back({where + ", n " + std::to_string(n) + ": accepted, but the combination is documented as refused"});
      continue;
    }
    ++tally.plans;
    const PlanReport& report = plan->report();
    tally.cover(std::string("plan ") + precision_name(op->precision()) + " " + kernel_name(kernel) + " B " +
                element_type_name(plan->input()) + " C " + (po.output == ElementType::f16 ? "fp16" : "fp32"));
    if (report.diagnostics.split_bands > 0) tally.cover("plans with split bands");
    if (report.csr_bands > 0 && report.tile_bands > 0) tally.cover("plans with tile and CSR bands");
    if (report.diagnostics.band_groups > 0) tally.cover("plans with band groups");
    if (report.empty_bands > 0) tally.cover("plans with empty bands");
    if (report.diagnostics.csr_long_rows > 0) tally.cover("plans with long CSR rows");
    const int products = static_cast<int>(uniform(rng, 1, 3));
    for (int q = 0; q < products; ++q) {
      Product pr;
      pr.n = n;
      const bool f32_b = plan->input() == ElementType::f32;
      const std::int64_t per_chunk = f32_b ? 4 : 8;
      pr.ldb = n + (rng() % 2 == 0 ? 0 : uniform(rng, 1, 9));
      pr.ldc = n + (rng() % 2 == 0 ? 0 : uniform(rng, 1, 5));
      pr.b_offset = rng() % 3 == 0 ? uniform(rng, 1, per_chunk - 1) : 0;
      if (!po.allow_unaligned_b) {
        // A plan without the workspace takes aligned B only; now and then it is given unaligned B on purpose.
        pr.expect_refusal = rng() % 6 == 0 && (pr.b_offset != 0 || pr.ldb % per_chunk != 0) && op->cols() > 0 &&
                            op->rows() > 0 && (report.tile_bands > 0 || (report.csr_bands > 0 && n >= 8));
        if (!pr.expect_refusal) {
          pr.b_offset = 0;
          pr.ldb = (pr.ldb + per_chunk - 1) / per_chunk * per_chunk;
        }
      }
      const double alphas[] = {1.0, 0.0, -1.0, 0.5, 3.0};
      const double betas[] = {0.0, 1.0, 0.0, -0.5};
      pr.alpha = rng() % 4 == 0 ? uniform_real(rng, -4.0, 4.0) : alphas[rng() % 5];
      pr.beta = rng() % 4 == 0 ? uniform_real(rng, -2.0, 2.0) : betas[rng() % 4];
      check_product(*op, stored, exponents, *plan, pr, rng, stream, tally, failures, where);
    }
  }
}

}  // namespace bcsr24::soak
