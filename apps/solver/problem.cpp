// Right-hand sides, diagonal scalings and host-side fp64 checks of a solve.
#include "problem.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <random>

#include "bcsr24/error.hpp"

namespace bcsr24::solver {

RhsKind rhs_kind_from_name(const std::string& name) {
  if (name == "a_times_random") return RhsKind::a_times_random;
  if (name == "random") return RhsKind::random;
  throw InvalidArgument("unknown right-hand side kind '" + name + "' (a_times_random, random)");
}

namespace {

/// y = A x for row-major n x k blocks.
std::vector<double> multiply(const CsrMatrix& a, const std::vector<double>& x, int k) {
  std::vector<double> y(static_cast<std::size_t>(a.rows) * k, 0.0);
  for (std::int32_t i = 0; i < a.rows; ++i)
    for (std::int32_t p = a.row_ptr[i]; p < a.row_ptr[i + 1]; ++p) {
      const double v = a.values[p];
      const double* xr = &x[static_cast<std::size_t>(a.col_idx[p]) * k];
      double* yr = &y[static_cast<std::size_t>(i) * k];
      for (int j = 0; j < k; ++j) yr[j] += v * xr[j];
    }
  return y;
}

}  // namespace

Problem make_problem(std::string name, CsrMatrix a, int k, RhsKind rhs, std::uint64_t seed) {
  if (k < 1) throw InvalidArgument("the number of right-hand sides must be >= 1");
  if (a.rows != a.cols) throw InvalidArgument("the matrix must be square, got " + std::to_string(a.rows) + " x " + std::to_string(a.cols));
  Problem p;
  p.name = std::move(name);
  p.k = k;
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  std::vector<double> random(static_cast<std::size_t>(a.rows) * k);
  for (double& v : random) v = uniform(rng);
  if (rhs == RhsKind::a_times_random) {
    p.b = multiply(a, random, k);
    p.x_true = std::move(random);
  } else {
    p.b = std::move(random);
  }
  p.a = std::move(a);
  return p;
}

double max_relative_residual_host(const CsrMatrix& a, const std::vector<double>& x, const std::vector<double>& b, int k) {
  const std::vector<double> ax = multiply(a, x, k);
  double worst = 0.0;
  for (int j = 0; j < k; ++j) {
    double rr = 0.0, bb = 0.0;
    for (std::int32_t i = 0; i < a.rows; ++i) {
      const std::size_t e = static_cast<std::size_t>(i) * k + j;
      rr += (b[e] - ax[e]) * (b[e] - ax[e]);
      bb += b[e] * b[e];
    }
    worst = std::max(worst, bb > 0.0 ? std::sqrt(rr / bb) : std::sqrt(rr));
  }
  return worst;
}

double max_relative_error(const std::vector<double>& x, const std::vector<double>& x_true, int k) {
  const std::size_t n = x.size() / static_cast<std::size_t>(k);
  double worst = 0.0;
  for (int j = 0; j < k; ++j) {
    double ee = 0.0, tt = 0.0;
    for (std::size_t i = 0; i < n; ++i) {
      const std::size_t e = i * k + j;
      ee += (x[e] - x_true[e]) * (x[e] - x_true[e]);
      tt += x_true[e] * x_true[e];
    }
    worst = std::max(worst, tt > 0.0 ? std::sqrt(ee / tt) : std::sqrt(ee));
  }
  return worst;
}

HostCheck check_on_host(const Problem& problem, const std::vector<double>& x) {
  HostCheck check;
  check.residual = max_relative_residual_host(problem.a, x, problem.b, problem.k);
  if (!problem.x_true.empty()) check.error = max_relative_error(x, problem.x_true, problem.k);
  return check;
}

}  // namespace bcsr24::solver
