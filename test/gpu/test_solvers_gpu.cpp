// bcsr24::solvers on the GPU through its public header: fp64 and fp32 blocks in device memory with row strides
// above k, on a caller's stream, checked by an independent fp64 residual on the host; the same problem on the host
// path converges too; a solver made once solves again without set-up; bad input is refused before any iteration.
//
// Tolerances: the solver stops on its own fp64 residual, so the host's recomputation (another summation order) may
// exceed rtol by rounding only: kRecomputeSlack. The fp32 overload rounds x once: |b - A fl(x)| <= |b - A x| +
// |A| |x - fl(x)| <= rtol |b| + 2^-24 || |A| |x| ||, the bound checked per column.
#include <catch2/catch.hpp>

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "bcsr24/solvers.hpp"
#include "bcsr24_testkit/diffusion.hpp"

namespace {

using namespace bcsr24;
using solvers::SolveOptions;
using solvers::SolveReport;
using solvers::SpdSolver;
using solvers::StopReason;

constexpr double kRecomputeSlack = 1.0 + 1e-6;

CsrMatrix diffusion(int nx, int ny, int nz) {
  DiffusionSpec spec;
  spec.nx = nx;
  spec.ny = ny;
  spec.nz = nz;
  spec.field = CoefficientField::inclusions;
  spec.inclusion_size = 3;
  spec.seed = 5;
  return generate_diffusion_matrix(spec);
}

template <typename T>
struct DeviceArray {
  T* ptr = nullptr;
  explicit DeviceArray(std::size_t count) {
    REQUIRE(cudaMalloc(reinterpret_cast<void**>(&ptr), count * sizeof(T)) == cudaSuccess);
  }
  ~DeviceArray() { cudaFree(ptr); }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
};

template <typename T>
std::vector<T> random_block(std::int32_t n, int k, int ld, std::uint64_t seed, T pad) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::vector<T> v(std::size_t(n) * ld, pad);
  for (std::int32_t i = 0; i < n; ++i)
    for (int c = 0; c < k; ++c) v[std::size_t(i) * ld + c] = T(u(rng));
  return v;
}

/// Per column: |b_j - A x_j| and the bound the test allows for it (rtol |b_j| plus, for fp32 x, its rounding).
template <typename T>
void check_residuals(const CsrMatrix& a, const std::vector<T>& b, const std::vector<T>& x, int ld, int k, double rtol,
                     bool rounded_x) {
  for (int c = 0; c < k; ++c) {
    double rr = 0.0, bb = 0.0, ax_abs2 = 0.0;
    for (std::int32_t i = 0; i < a.rows; ++i) {
      double ax = 0.0, ax_abs = 0.0;
      for (std::int32_t p = a.row_ptr[i]; p < a.row_ptr[i + 1]; ++p) {
        const double term = a.values[std::size_t(p)] * double(x[std::size_t(a.col_idx[std::size_t(p)]) * ld + c]);
        ax += term;
        ax_abs += std::abs(term);
      }
      const double bi = double(b[std::size_t(i) * ld + c]);
      rr += (bi - ax) * (bi - ax);
      bb += bi * bi;
      ax_abs2 += ax_abs * ax_abs;
    }
    const double bound =
        rtol * std::sqrt(bb) * kRecomputeSlack + (rounded_x ? std::ldexp(1.0, -24) * std::sqrt(ax_abs2) : 0.0);
    CAPTURE(c, std::sqrt(rr), bound);
    CHECK(std::sqrt(rr) <= bound);
  }
}

}  // namespace

TEMPLATE_TEST_CASE("SpdSolver::solve on device blocks (fp64, fp32) converges in the true residual", "[solvers]",
                   double, float) {
  const CsrMatrix a = diffusion(9, 7, 11);  // 693 rows
  const int k = GENERATE(1, 16, 37);
  const int ld = k + 2;
  CAPTURE(k);
  SpdSolver solver(a);
  const std::vector<TestType> b = random_block<TestType>(a.rows, k, ld, 3 + k, TestType(1e30));
  std::vector<TestType> x(b.size(), std::numeric_limits<TestType>::quiet_NaN());
  for (std::int32_t i = 0; i < a.rows; ++i)
    for (int c = k; c < ld; ++c) x[std::size_t(i) * ld + c] = TestType(-5);  // padding: never written
  DeviceArray<TestType> db(b.size()), dx(x.size());
  cudaStream_t stream = nullptr;
  REQUIRE(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) == cudaSuccess);
  REQUIRE(cudaMemcpyAsync(db.ptr, b.data(), b.size() * sizeof(TestType), cudaMemcpyHostToDevice, stream) ==
          cudaSuccess);
  REQUIRE(cudaMemcpyAsync(dx.ptr, x.data(), x.size() * sizeof(TestType), cudaMemcpyHostToDevice, stream) ==
          cudaSuccess);
  SolveOptions options;
  const SolveReport report = solver.solve(db.ptr, ld, dx.ptr, ld, k, options, stream);
  INFO(report.message);
  REQUIRE(report.stop == StopReason::converged);
  REQUIRE(cudaMemcpyAsync(x.data(), dx.ptr, x.size() * sizeof(TestType), cudaMemcpyDeviceToHost, stream) ==
          cudaSuccess);
  REQUIRE(cudaStreamSynchronize(stream) == cudaSuccess);
  check_residuals(a, b, x, ld, k, options.rtol, sizeof(TestType) == 4);
  for (std::int32_t i = 0; i < a.rows; ++i)
    for (int c = k; c < ld; ++c) REQUIRE(x[std::size_t(i) * ld + c] == TestType(-5));
  CHECK(report.host_synchronizations == report.iterations);  // one status read per iteration
  CHECK(report.product_seconds > 0.0);
  CHECK(report.product_share > 0.0);
  CHECK(report.product_share < 1.0);
  CHECK_FALSE(report.plan.empty());

  // Solved again with the same k: no set-up, no spectrum estimate, the same iterations.
  const SolveReport again = solver.solve(db.ptr, ld, dx.ptr, ld, k, options, stream);
  CHECK(again.stop == StopReason::converged);
  CHECK(again.setup_seconds == 0.0);
  CHECK(again.spectrum_seconds == 0.0);
  CHECK(again.iterations == report.iterations);
  REQUIRE(cudaStreamDestroy(stream) == cudaSuccess);
}

TEST_CASE("SpdSolver on the GPU and on the host path: both converge on the same problem", "[solvers]") {
  const CsrMatrix a = diffusion(10, 9, 8);
  const int k = 5;
  SpdSolver solver(a);
  const std::vector<double> b = random_block<double>(a.rows, k, k, 8, 0.0);
  std::vector<double> x_host(b.size()), x_gpu(b.size());
  const SolveReport on_host = solver.solve_host(b.data(), k, x_host.data(), k, k);
  DeviceArray<double> db(b.size()), dx(b.size());
  REQUIRE(cudaMemcpy(db.ptr, b.data(), b.size() * sizeof(double), cudaMemcpyHostToDevice) == cudaSuccess);
  const SolveReport on_gpu = solver.solve(db.ptr, k, dx.ptr, k, k);
  REQUIRE(cudaMemcpy(x_gpu.data(), dx.ptr, b.size() * sizeof(double), cudaMemcpyDeviceToHost) == cudaSuccess);
  INFO(on_host.message << " / " << on_gpu.message);
  REQUIRE(on_host.stop == StopReason::converged);
  REQUIRE(on_gpu.stop == StopReason::converged);
  check_residuals(a, b, x_gpu, k, k, 1e-8, false);
  check_residuals(a, b, x_host, k, k, 1e-8, false);
  // The same algorithm, rounded differently: the iteration counts stay close.
  CHECK(std::abs(on_gpu.iterations - on_host.iterations) <= 2);
}

TEST_CASE("SpdSolver::solve refuses NaN in b on the device before iterating", "[solvers]") {
  const CsrMatrix a = diffusion(6, 6, 6);
  SpdSolver solver(a);
  const int k = 2;
  std::vector<double> b = random_block<double>(a.rows, k, k, 1, 0.0);
  b[17] = std::numeric_limits<double>::quiet_NaN();
  DeviceArray<double> db(b.size()), dx(b.size());
  REQUIRE(cudaMemcpy(db.ptr, b.data(), b.size() * sizeof(double), cudaMemcpyHostToDevice) == cudaSuccess);
  REQUIRE_THROWS_WITH(solver.solve(db.ptr, k, dx.ptr, k, k), Catch::Contains("b column 1"));
}

TEST_CASE("SpdSolver::eigenpairs on the device agrees with the host path within the residual norms", "[solvers]") {
  const CsrMatrix a = diffusion(9, 7, 11);
  SpdSolver solver(a);
  const int k = 8, ld = k + 1;
  for (const bool largest : {false, true}) {
    CAPTURE(largest);
    solvers::EigenOptions options;
    options.largest = largest;
    options.tol = 1e-8;
    const std::vector<double> start = random_block<double>(a.rows, k, ld, 12, 9.0);
    std::vector<double> x_host(start), x_gpu(start);
    const solvers::EigenReport on_host = solver.eigenpairs_host(x_host.data(), ld, k, options);
    DeviceArray<double> dx(start.size());
    REQUIRE(cudaMemcpy(dx.ptr, start.data(), start.size() * sizeof(double), cudaMemcpyHostToDevice) == cudaSuccess);
    const solvers::EigenReport on_gpu = solver.eigenpairs(dx.ptr, ld, k, options);
    REQUIRE(cudaMemcpy(x_gpu.data(), dx.ptr, start.size() * sizeof(double), cudaMemcpyDeviceToHost) == cudaSuccess);
    INFO(on_host.message << " / " << on_gpu.message);
    REQUIRE(on_host.stop == StopReason::converged);
    REQUIRE(on_gpu.stop == StopReason::converged);
    CHECK(on_gpu.host_synchronizations <= on_gpu.iterations + 3);  // one read per iteration, and the start's
    CHECK(on_gpu.product_share > 0.0);
    for (int j = 0; j < k; ++j) {
      const double bound = on_gpu.residual_norm[std::size_t(j)] + on_host.residual_norm[std::size_t(j)];
      CAPTURE(j, on_gpu.eigenvalues[std::size_t(j)], on_host.eigenvalues[std::size_t(j)], bound);
      CHECK(std::abs(on_gpu.eigenvalues[std::size_t(j)] - on_host.eigenvalues[std::size_t(j)]) <= bound * 1.000001);
    }
    for (std::int32_t i = 0; i < a.rows; ++i)  // the padding column is never written
      REQUIRE(x_gpu[std::size_t(i) * ld + k] == 9.0);
    for (int p = 0; p < k; ++p)
      for (int q = 0; q < k; ++q) {
        double dot = 0.0;
        for (std::int32_t i = 0; i < a.rows; ++i) dot += x_gpu[std::size_t(i) * ld + p] * x_gpu[std::size_t(i) * ld + q];
        CHECK(std::abs(dot - (p == q ? 1.0 : 0.0)) <= 1e-8);
      }
  }
}

TEST_CASE("SpdSolver::eigenpairs(M, ...) on the device agrees with the host path (generalized problem)", "[solvers]") {
  const CsrMatrix a = diffusion(9, 7, 11);
  // M on A's pattern: diagonal 1 + 0.5 sin(i), off-diagonal -0.05 a_ij / sqrt(a_ii a_jj) (|.| <= 0.05, at most six
  // per row), so by Gershgorin M is SPD with every eigenvalue >= 0.5 - 0.3 = 0.2.
  CsrMatrix m = a;
  std::vector<double> diagonal(std::size_t(a.rows), 0.0);
  for (std::int32_t i = 0; i < a.rows; ++i)
    for (std::int32_t p = a.row_ptr[i]; p < a.row_ptr[i + 1]; ++p)
      if (a.col_idx[std::size_t(p)] == i) diagonal[std::size_t(i)] = a.values[std::size_t(p)];
  for (std::int32_t i = 0; i < a.rows; ++i)
    for (std::int32_t p = a.row_ptr[i]; p < a.row_ptr[i + 1]; ++p) {
      const std::int32_t j = a.col_idx[std::size_t(p)];
      m.values[std::size_t(p)] = j == i ? 1.0 + 0.5 * std::sin(double(i))
                                        : -0.05 * a.values[std::size_t(p)] /
                                              std::sqrt(diagonal[std::size_t(i)] * diagonal[std::size_t(j)]);
    }
  const double m_smallest_bound = 0.2;
  SpdSolver solver(a);
  const int k = 6, ld = k + 2;
  solvers::EigenOptions options;
  options.tol = 1e-8;
  const std::vector<double> start = random_block<double>(a.rows, k, ld, 14, 5.0);
  std::vector<double> x_host(start), x_gpu(start);
  const solvers::EigenReport on_host = solver.eigenpairs_host(m, x_host.data(), ld, k, options);
  DeviceArray<double> dx(start.size());
  REQUIRE(cudaMemcpy(dx.ptr, start.data(), start.size() * sizeof(double), cudaMemcpyHostToDevice) == cudaSuccess);
  const solvers::EigenReport on_gpu = solver.eigenpairs(m, dx.ptr, ld, k, options);
  REQUIRE(cudaMemcpy(x_gpu.data(), dx.ptr, start.size() * sizeof(double), cudaMemcpyDeviceToHost) == cudaSuccess);
  INFO(on_host.message << " / " << on_gpu.message);
  REQUIRE(on_host.stop == StopReason::converged);
  REQUIRE(on_gpu.stop == StopReason::converged);
  CHECK(on_gpu.host_synchronizations <= on_gpu.iterations + 4);
  for (int j = 0; j < k; ++j) {
    const double bound =
        (on_gpu.residual_norm[std::size_t(j)] + on_host.residual_norm[std::size_t(j)]) / std::sqrt(m_smallest_bound);
    CAPTURE(j, on_gpu.eigenvalues[std::size_t(j)], on_host.eigenvalues[std::size_t(j)], bound);
    CHECK(std::abs(on_gpu.eigenvalues[std::size_t(j)] - on_host.eigenvalues[std::size_t(j)]) <= bound * 1.000001);
  }
  for (std::int32_t i = 0; i < a.rows; ++i) REQUIRE(x_gpu[std::size_t(i) * ld + k] == 5.0);
  // X^T M X = I for the device's vectors.
  std::vector<double> mx(std::size_t(a.rows) * k, 0.0);
  for (std::int32_t i = 0; i < a.rows; ++i)
    for (std::int32_t p = m.row_ptr[i]; p < m.row_ptr[i + 1]; ++p)
      for (int c = 0; c < k; ++c)
        mx[std::size_t(i) * k + c] += m.values[std::size_t(p)] * x_gpu[std::size_t(m.col_idx[std::size_t(p)]) * ld + c];
  for (int p = 0; p < k; ++p)
    for (int q = 0; q < k; ++q) {
      double dot = 0.0;
      for (std::int32_t i = 0; i < a.rows; ++i) dot += x_gpu[std::size_t(i) * ld + p] * mx[std::size_t(i) * k + q];
      CHECK(std::abs(dot - (p == q ? 1.0 : 0.0)) <= 1e-8);
    }
  // A solve after the call runs without M (the space is shared).
  REQUIRE(cudaMemcpy(dx.ptr, start.data(), start.size() * sizeof(double), cudaMemcpyHostToDevice) == cudaSuccess);
  const solvers::EigenReport plain = solver.eigenpairs(dx.ptr, ld, k, options);
  CHECK(plain.stop == StopReason::converged);
}
