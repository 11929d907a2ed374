// GPU test harness: run one kernel on poisoned output, compare with Eigen's float64 product element-wise.
#include "gpu/gpu_harness.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <random>

#include <cuda_runtime_api.h>
#include <Eigen/Dense>

#include "bcsr24/error.hpp"
#include "bcsr24/half.hpp"
#include "test_eigen.hpp"
#include "test_support.hpp"

namespace bcsr24::test {

namespace {

void check_cuda(cudaError_t s, const char* what) {
  if (s != cudaSuccess) throw CudaError(std::string(what) + ": " + cudaGetErrorString(s));
}

/// Device allocation freed on scope exit (tests only).
struct DeviceBytes {
  void* ptr = nullptr;
  explicit DeviceBytes(std::size_t bytes) { check_cuda(cudaMalloc(&ptr, bytes ? bytes : 16), "cudaMalloc"); }
  ~DeviceBytes() { cudaFree(ptr); }
  DeviceBytes(const DeviceBytes&) = delete;
  DeviceBytes& operator=(const DeviceBytes&) = delete;
};

/// B (compact for the reference, strided with NaN in the padding for the GPU) and C0 (NaN poison when beta == 0:
/// it must be overwritten, never read; random values otherwise), compact and at ldc as uploaded.
struct HostOperands {
  std::vector<std::uint16_t> b, b_strided;
  std::vector<float> c0, c_init;
};

HostOperands make_operands(std::int32_t m, std::int32_t k, std::int64_t ldb, std::int64_t ldc, const GpuCase& cfg,
                           std::mt19937_64& rng, std::uniform_real_distribution<double>& dist) {
  const std::int32_t n = cfg.n;
  const bool half_out = cfg.output == ElementType::f16;
  HostOperands ops;
  ops.b = random_fp16(k, n, cfg.seed * 7919 + 1);
  ops.b_strided.assign(static_cast<std::size_t>(std::max<std::int64_t>(k * ldb, 1)),
                       double_to_fp16(std::numeric_limits<double>::quiet_NaN()));
  for (std::int64_t r = 0; r < k; ++r)
    for (std::int32_t j = 0; j < n; ++j) ops.b_strided[r * ldb + j] = ops.b[r * n + j];
  ops.c0.resize(static_cast<std::size_t>(m) * n);
  ops.c_init.assign(static_cast<std::size_t>(std::max<std::int64_t>(m * ldc, 1)),
                    std::numeric_limits<float>::quiet_NaN());
  for (std::int32_t i = 0; i < m; ++i)
    for (std::int32_t j = 0; j < n; ++j) {
      float v = cfg.beta == 0.0 ? std::numeric_limits<float>::quiet_NaN() : float(dist(rng));
      if (half_out) v = fp16_to_float(float_to_fp16(v));
      ops.c0[std::size_t(i) * n + j] = v;
      ops.c_init[std::size_t(i) * ldc + j] = v;
    }
  return ops;
}

/// A case's addends: random fp32 D_t with scales that are not powers of two; the first with a padded, odd leading
/// dimension (the kernels' scalar path), the second packed (their vector loads where n allows).
struct Addends {
  static constexpr float kScale[2] = {0.75f, -1.3f};
  std::int64_t ld[2] = {0, 0};
  std::vector<std::vector<float>> values;
  std::vector<std::unique_ptr<DeviceBytes>> device;
  std::vector<OutputAddend> list;

  /// scale_t * D_t(i, j)
  double term(int t, std::int32_t i, std::int32_t j) const {
    return double(kScale[t]) * double(values[std::size_t(t)][std::size_t(i * ld[t] + j)]);
  }
};

Addends make_addends(std::int32_t m, std::int32_t n, int count, std::mt19937_64& rng,
                     std::uniform_real_distribution<double>& dist) {
  Addends a;
  a.ld[0] = n + 3;
  a.ld[1] = n;
  a.values.resize(static_cast<std::size_t>(count));
  for (int t = 0; t < count; ++t) {
    const std::int64_t ld = a.ld[t];
    std::vector<float>& d = a.values[std::size_t(t)];
    d.assign(static_cast<std::size_t>(std::max<std::int64_t>(m * ld, 1)), std::numeric_limits<float>::quiet_NaN());
    for (std::int32_t i = 0; i < m; ++i)
      for (std::int32_t j = 0; j < n; ++j) d[std::size_t(i * ld + j)] = float(dist(rng));
    a.device.push_back(std::make_unique<DeviceBytes>(d.size() * 4));
    check_cuda(cudaMemcpy(a.device.back()->ptr, d.data(), d.size() * 4, cudaMemcpyHostToDevice), "copy D");
    a.list.push_back({static_cast<const float*>(a.device.back()->ptr), ld, Addends::kScale[t]});
  }
  return a;
}

/// C uploaded as given (fp16 bits for fp16 output), `count` elements.
void upload_c(void* d_c, const std::vector<float>& c, bool half_out) {
  if (half_out) {
    std::vector<std::uint16_t> h(c.size());
    for (std::size_t i = 0; i < c.size(); ++i) h[i] = float_to_fp16(c[i]);
    check_cuda(cudaMemcpy(d_c, h.data(), c.size() * 2, cudaMemcpyHostToDevice), "copy C");
  } else {
    check_cuda(cudaMemcpy(d_c, c.data(), c.size() * 4, cudaMemcpyHostToDevice), "copy C");
  }
}

/// C back from the device as floats (fp16 widened).
std::vector<float> download_c(const void* d_c, std::size_t count, bool half_out) {
  std::vector<float> c(count);
  if (half_out) {
    std::vector<std::uint16_t> h(count);
    check_cuda(cudaMemcpy(h.data(), d_c, count * 2, cudaMemcpyDeviceToHost), "copy C back");
    for (std::size_t i = 0; i < count; ++i) c[i] = fp16_to_float(h[i]);
  } else {
    check_cuda(cudaMemcpy(c.data(), d_c, count * 4, cudaMemcpyDeviceToHost), "copy C back");
  }
  return c;
}

/// Every output of out.c (rows x ldc) against the float64 reference alpha A B + beta C0 (+ the addends) from the
/// original (unrounded) matrix and the fp16 B, within its bound; the padding columns must still hold their NaN.
void compare_outputs(const CsrMatrix& a, const Bcsr24Matrix& host, const GpuCase& cfg, const HostOperands& ops,
                     const Addends& addends, std::int64_t ldc, GpuCheck& out) {
  const std::int32_t m = a.rows, k = a.cols, n = cfg.n;
  const bool half_out = cfg.output == ElementType::f16;
  Eigen::MatrixXd bd(k, n);
  for (std::int32_t r = 0; r < k; ++r)
    for (std::int32_t j = 0; j < n; ++j) bd(r, j) = fp16_to_float(ops.b[std::size_t(r) * n + j]);
  const Eigen::MatrixXd ab = to_eigen(a) * bd;
  const std::vector<float> c0_for_bound = cfg.beta == 0.0 ? std::vector<float>() : ops.c0;
  const std::vector<double> bound =
      spmm_error_bound(a, n, ops.b, cfg.alpha, cfg.beta, c0_for_bound, storage_rounding(host));

  double err2 = 0.0, ref2 = 0.0, out2 = 0.0;
  for (std::int32_t i = 0; i < m; ++i)
    for (std::int32_t j = 0; j < n; ++j) {
      double ref = cfg.alpha * ab(i, j);
      if (cfg.beta != 0.0) ref += cfg.beta * double(ops.c0[std::size_t(i) * n + j]);
      const double got = out.c[std::size_t(i) * ldc + j];
      double tol = bound[std::size_t(i) * n + j];
      if (cfg.addends > 0) {
        // Each addend is one fp32 fused multiply-add onto a partial result no larger than |alpha A B| (within its
        // bound), the addends' magnitudes and |beta C0|: one rounding of at most 2^-24 of that sum per addend; and
        // the beta step's rounding, which the product's bound charges on |alpha A B| + |beta C0| only, now also
        // covers the addends' part of the value it rounds: one more such rounding where beta != 0.
        double magnitude = std::fabs(cfg.alpha * ab(i, j)) + tol;
        if (cfg.beta != 0.0) magnitude += std::fabs(cfg.beta * double(ops.c0[std::size_t(i) * n + j]));
        for (int t = 0; t < cfg.addends; ++t) {
          const double term = addends.term(t, i, j);
          ref += term;
          magnitude += std::fabs(term);
        }
        tol += (cfg.addends + (cfg.beta != 0.0 ? 1 : 0)) * std::ldexp(magnitude, -24);
      }
      if (half_out) tol += std::fabs(ref) * std::ldexp(1.0, -11) + std::ldexp(1.0, -25);  // final fp16 rounding
      const double e = std::fabs(got - ref);
      ++out.checked;
      if (!std::isfinite(got) || e > tol) {
        ++out.violations;
        if (out.violating_rows.empty() || out.violating_rows.back() != i) out.violating_rows.push_back(i);
        out.first_bad_col = out.first_bad_col < 0 ? j : std::min(out.first_bad_col, j);
        out.last_bad_col = std::max(out.last_bad_col, j);
      }
      if (std::isfinite(got)) out.max_ratio = std::max(out.max_ratio, e / tol);
      err2 += e * e;
      ref2 += ref * ref;
      out2 += got * got;
    }
  out.rel_error = ref2 > 0 ? std::sqrt(err2 / ref2) : std::sqrt(err2);
  out.output_norm = std::sqrt(out2);
  // Padding columns of C (ldc > n) must be untouched.
  for (std::int32_t i = 0; i < m; ++i)
    for (std::int64_t j = n; j < ldc; ++j)
      if (!std::isnan(out.c[std::size_t(i) * ldc + j])) ++out.violations;
}

}  // namespace

GpuCase width_case(std::int32_t n, std::uint64_t seed) {
  GpuCase cfg;
  cfg.n = n;
  cfg.seed = seed + std::uint64_t(n);
  return cfg;
}

DeviceMatrix upload_all(const Bcsr24Matrix& host) { return DeviceMatrix(host, UploadOptions{CsrCopy::all}); }

SpmmPlan make_plan(const DeviceMatrix& dev, std::int32_t n, KernelKind kernel, const PlanOptions& options,
                   const PlanKnobs& knobs) {
  PlanOptions model = options;
  model.tuning = Tuning::model;
  return detail::PlanAccess::make(dev, n, kernel, model, knobs);
}

GpuCheck run_and_check(const CsrMatrix& a, const Bcsr24Matrix& host, const DeviceMatrix& dev, KernelKind kernel,
                       const GpuCase& cfg) {
  const std::int32_t m = a.rows, k = a.cols, n = cfg.n;
  const std::int64_t ldb = n + cfg.ldb_pad, ldc = n + cfg.ldc_pad;
  const bool half_out = cfg.output == ElementType::f16;
  std::mt19937_64 rng(cfg.seed);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  const HostOperands ops = make_operands(m, k, ldb, ldc, cfg, rng, dist);

  const std::size_t c_count = ops.c_init.size(), elem = half_out ? 2 : 4;
  DeviceBytes d_b((ops.b_strided.size() + cfg.b_offset) * 2);
  DeviceBytes d_c(c_count * elem);
  auto* b_dev = static_cast<std::uint16_t*>(d_b.ptr) + cfg.b_offset;
  check_cuda(cudaMemcpy(b_dev, ops.b_strided.data(), ops.b_strided.size() * 2, cudaMemcpyHostToDevice), "copy B");
  const Addends addends = make_addends(m, n, cfg.addends, rng, dist);

  PlanOptions options;
  options.output = cfg.output;
  const SpmmPlan plan = make_plan(dev, n, kernel, options, static_cast<const PlanKnobs&>(cfg));
  // Every run starts from the same poisoned C; the last one is checked, so state a run leaves behind in the
  // plan (split-band counters) must be right for the next.
  for (int run = 0; run < std::max(1, cfg.runs); ++run) {
    upload_c(d_c.ptr, ops.c_init, half_out);
    if (cfg.addends > 0)
      plan.run(b_dev, ldb, d_c.ptr, ldc, float(cfg.alpha), float(cfg.beta), addends.list.data(), cfg.addends, nullptr);
    else
      plan.run(b_dev, ldb, d_c.ptr, ldc, float(cfg.alpha), float(cfg.beta), nullptr);
  }
  check_cuda(cudaDeviceSynchronize(), "kernel");

  GpuCheck out;
  out.c_initial = ops.c_init;
  out.c = download_c(d_c.ptr, c_count, half_out);
  compare_outputs(a, host, cfg, ops, addends, ldc, out);
  return out;
}

bool same_bits(const std::vector<float>& x, const std::vector<float>& y) {
  return x.size() == y.size() && std::memcmp(x.data(), y.data(), x.size() * sizeof(float)) == 0;
}

void require_pass(const GpuCheck& r) {
  std::string rows;
  for (std::size_t i = 0; i < r.violating_rows.size() && i < 24; ++i) rows += " " + std::to_string(r.violating_rows[i]);
  if (r.violating_rows.size() > 24) rows += " ...";
  INFO("checked " << r.checked << " outputs, violations " << r.violations << ", max error/bound " << r.max_ratio
                  << ", relative error " << r.rel_error);
  INFO("rows with violations (" << r.violating_rows.size() << "):" << rows << "; columns " << r.first_bad_col
                                 << ".." << r.last_bad_col);
  REQUIRE(r.checked > 0);
  REQUIRE(r.violations == 0);
  REQUIRE(r.output_norm > 0.0);
}

GivenB given_b(const std::vector<float>& b, bool f32, Precision precision) {
  GivenB given{std::vector<fp16_t>(b.size()), std::vector<double>(b.size())};
  for (std::size_t i = 0; i < b.size(); ++i) {
    if (f32) {
      given.exact[i] = b[i];
    } else if (precision == Precision::bf16) {
      given.b16[i] = double_to_bf16(b[i]);
      given.exact[i] = bf16_to_float(given.b16[i]);
    } else {
      given.b16[i] = double_to_fp16(b[i]);
      given.exact[i] = fp16_to_float(given.b16[i]);
    }
  }
  return given;
}

ModeCheck run_mode_product(const CsrMatrix& a, const Bcsr24Matrix& host, const SpmmPlan& plan, std::int32_t n,
                           bool f32, const std::vector<float>& b, const GivenB& given, const std::vector<float>& c0,
                           double alpha, double beta, const ModeArithmetic& arithmetic) {
  void* d_b = nullptr;
  float* d_c = nullptr;
  REQUIRE(cudaMalloc(&d_b, std::max<std::size_t>(b.size() * 4, 16)) == cudaSuccess);
  REQUIRE(cudaMalloc(reinterpret_cast<void**>(&d_c), std::max<std::size_t>(c0.size() * 4, 16)) == cudaSuccess);
  if (f32)
    REQUIRE(cudaMemcpy(d_b, b.data(), b.size() * 4, cudaMemcpyHostToDevice) == cudaSuccess);
  else
    REQUIRE(cudaMemcpy(d_b, given.b16.data(), given.b16.size() * 2, cudaMemcpyHostToDevice) == cudaSuccess);
  REQUIRE(cudaMemcpy(d_c, c0.data(), c0.size() * 4, cudaMemcpyHostToDevice) == cudaSuccess);
  if (f32)
    plan.run(static_cast<const float*>(d_b), n, d_c, n, float(alpha), float(beta));
  else
    plan.run(static_cast<const fp16_t*>(d_b), n, d_c, n, float(alpha), float(beta));
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  std::vector<float> c(c0.size());
  REQUIRE(cudaMemcpy(c.data(), d_c, c.size() * 4, cudaMemcpyDeviceToHost) == cudaSuccess);
  cudaFree(d_b);
  cudaFree(d_c);
  // Reference and bound from the original A.
  std::vector<std::int32_t> exponent(std::size_t(a.rows));
  for (std::int32_t i = 0; i < a.rows; ++i) exponent[std::size_t(i)] = host.exponent_of_row(i);
  return check_mode_product(a, n, given.exact, c0, alpha, beta, c, exponent, arithmetic, 16);
}

}  // namespace bcsr24::test
