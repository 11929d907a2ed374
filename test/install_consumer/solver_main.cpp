// Outside consumer of bcsr24::solvers: solves a 1-D Laplacian with two right-hand sides on the host path (no GPU
// needed) and checks the residual itself.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <vector>

#include <bcsr24/solvers.hpp>

int main() {
  const std::int32_t n = 101;
  const int k = 2;
  bcsr24::CsrMatrix a;
  a.rows = a.cols = n;
  for (std::int32_t i = 0; i < n; ++i) {
    for (std::int32_t j : {i - 1, i, i + 1})
      if (j >= 0 && j < n) {
        a.col_idx.push_back(j);
        a.values.push_back(j == i ? 2.0 : -1.0);
      }
    a.row_ptr.push_back(static_cast<std::int32_t>(a.col_idx.size()));
  }
  std::vector<double> b(std::size_t(n) * k), x(b.size());
  for (std::int32_t i = 0; i < n; ++i) {
    b[std::size_t(i) * k] = 1.0;
    b[std::size_t(i) * k + 1] = std::sin(0.1 * i);
  }
  try {
    bcsr24::solvers::SpdSolver solver(a);
    const bcsr24::solvers::SolveReport report = solver.solve_host(b.data(), k, x.data(), k, k);
    double worst = 0.0;
    for (int c = 0; c < k; ++c) {
      double rr = 0.0, bb = 0.0;
      for (std::int32_t i = 0; i < n; ++i) {
        double ax = 0.0;
        for (std::int32_t p = a.row_ptr[i]; p < a.row_ptr[i + 1]; ++p)
          ax += a.values[p] * x[std::size_t(a.col_idx[p]) * k + c];
        const double r = b[std::size_t(i) * k + c] - ax;
        rr += r * r;
        bb += b[std::size_t(i) * k + c] * b[std::size_t(i) * k + c];
      }
      worst = std::fmax(worst, std::sqrt(rr / bb));
    }
    std::printf("solver consumer: %s after %d iterations, relative residual %.2e (host check %.2e)\n",
                bcsr24::solvers::stop_reason_name(report.stop), report.iterations, report.relative_residual[0],
                worst);
    if (report.stop != bcsr24::solvers::StopReason::converged || !(worst <= 1e-8 * (1.0 + 1e-6))) return 1;
  } catch (const bcsr24::Error& e) {
    std::printf("solver consumer: bcsr24 error: %s\n", e.what());
    return 1;
  }
  return 0;
}
