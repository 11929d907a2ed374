// The block solver's GPU space (lib/solvers: GpuBlockSpace and its kernels) against fp64 host references: Gram
// matrices, block combinations, column dots and the fp64 CSR products for every shape the kernels split differently (k = 1 .. 64, one and
// two right blocks, a right block equal to the left one, combines spread over several launches), on row counts that
// are no multiple of anything; then whole block solves on the GPU, which must reach the tolerance in the host's own
// fp64 check, with the true residual every iteration and with residual replacement every few iterations.
//
// Tolerances: a sum of m products computed in fp64 in any order is within gamma_m = m u / (1 - m u) (u = 2^-53) of
// the exact sum, relative to the sum of the products' magnitudes (Higham, Accuracy and Stability, 3.1). The GPU and
// the host reference each make at most that error, so they may differ by twice it. An indexing error or a lost
// partial sum is of the order of the magnitudes themselves.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <tuple>
#include <vector>

#include "bcsr24/precision.hpp"
#include "block_fcg.hpp"
#include "chebyshev.hpp"
#include "bcsr24_testkit/diffusion.hpp"
#include "cusparse_support.hpp"
#include "gpu_block_space.hpp"
#include "problem.hpp"
#include "solver_test_support.hpp"
#include "test_support.hpp"

using namespace bcsr24::solver;
using bcsr24::CsrMatrix;

namespace {

using S = BlockSlots;

double gamma_bound(double m) {
  const double u = std::ldexp(1.0, -53);
  return m * u / (1.0 - m * u);
}

std::vector<double> random_values(std::size_t count, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::vector<double> v(count);
  for (double& x : v) x = u(rng);
  return v;
}

std::vector<double> read_matrix(BlockSpace& space, std::int64_t offset, int count) {
  std::vector<double> out(static_cast<std::size_t>(count));
  space.read_small(offset, count, out.data());
  return out;
}

/// A diffusion problem of about `rows` rows (nx * ny * nz, no multiple of 8) with k right-hand sides.
Problem diffusion_problem(int nx, int ny, int nz, int k) {
  DiffusionSpec spec = test::small_diffusion(CoefficientField::inclusions, nx, 3);
  spec.ny = ny;
  spec.nz = nz;
  return make_problem(diffusion_name(spec), generate_diffusion_matrix(spec), k, RhsKind::a_times_random,
                      bcsr24::test::test_seed(11));
}

struct SpaceFixture {
  Problem problem;
  InnerMatrix inner;
  GpuBlockSpace space;
  std::mt19937_64 rng{17};
  std::vector<std::vector<double>> host;  // what each slot holds

  SpaceFixture(int nx, int ny, int nz, int k, int memory, OuterProduct outer = OuterProduct::csr_kernel)
      : problem(diffusion_problem(nx, ny, nz, k)),
        inner(test::make_inner(problem.a, InnerBackend::bcsr24, bcsr24::Precision::split)),
        space(problem.a, inner, k, memory, 4, false, outer, cusparse_products()),
        host(std::size_t(S::count(memory))) {
    for (int slot = 0; slot < S::count(memory); ++slot) {
      host[std::size_t(slot)] = random_values(std::size_t(problem.a.rows) * k, rng);
      space.set_slot(slot, host[std::size_t(slot)]);
    }
  }
  std::int32_t n() const { return problem.a.rows; }
  int k() const { return problem.k; }
};

/// left^T right on the host (column-major k x k) and the sums of the products' magnitudes.
void host_gram(const std::vector<double>& left, const std::vector<double>& right, std::int32_t n, int k,
               std::vector<double>& gram, std::vector<double>& magnitude) {
  gram.assign(std::size_t(k) * k, 0.0);
  magnitude.assign(std::size_t(k) * k, 0.0);
  for (std::int64_t i = 0; i < n; ++i)
    for (int b = 0; b < k; ++b)
      for (int a = 0; a < k; ++a) {
        const double p = left[std::size_t(i * k + a)] * right[std::size_t(i * k + b)];
        gram[std::size_t(a + b * k)] += p;
        magnitude[std::size_t(a + b * k)] += std::fabs(p);
      }
}

/// Largest |gpu - host| / (2 gamma_m magnitude) over the entries: at most 1 within the bound.
double worst_ratio(const std::vector<double>& gpu, const std::vector<double>& host,
                   const std::vector<double>& magnitude, double m) {
  double worst = 0.0;
  for (std::size_t i = 0; i < gpu.size(); ++i) {
    const double bound = 2.0 * gamma_bound(m) * magnitude[i];
    const double error = std::fabs(gpu[i] - host[i]);
    worst = std::max(worst, bound > 0 ? error / bound : (error == 0.0 ? 0.0 : HUGE_VAL));
  }
  return worst;
}

/// q(0) = A p(0) and r = b - A x in the space against host sums: each entry within 2 gamma_m of the sum of the
/// terms' magnitudes (m: the row's entries, plus b's entry for the residual).
void check_products(GpuBlockSpace& space, const CsrMatrix& a, std::vector<std::vector<double>>& host, std::int32_t n,
                    int k) {
  space.multiply(S::q(0), S::p(0));
  space.residual(S::r, S::b, S::x);
  const std::vector<double> q = space.slot(S::q(0));
  const std::vector<double> r = space.slot(S::r);
  double worst = 0.0;
  for (std::int32_t i = 0; i < n; ++i) {
    const std::int32_t begin = a.row_ptr[std::size_t(i)], end = a.row_ptr[std::size_t(i) + 1];
    for (int c = 0; c < k; ++c) {
      double aq = 0.0, aq_magnitude = 0.0, ax = 0.0, ax_magnitude = 0.0;
      for (std::int32_t e = begin; e < end; ++e) {
        const std::size_t j = std::size_t(a.col_idx[std::size_t(e)]) * k + c;
        const double v = a.values[std::size_t(e)];
        aq += v * host[S::p(0)][j];
        aq_magnitude += std::fabs(v * host[S::p(0)][j]);
        ax += v * host[S::x][j];
        ax_magnitude += std::fabs(v * host[S::x][j]);
      }
      const std::size_t at = std::size_t(i) * k + c;
      const double m = end - begin + 1.0;
      worst = std::max(worst, std::fabs(q[at] - aq) / (2.0 * gamma_bound(m) * aq_magnitude));
      const double b = host[S::b][at];
      worst = std::max(worst, std::fabs(r[at] - (b - ax)) / (2.0 * gamma_bound(m) * (std::fabs(b) + ax_magnitude)));
    }
  }
  CHECK(worst <= 1.0);
  // The residual's column norms (the CSR kernel sums them in its own pass, cuSPARSE in a second one) against the
  // host's sums of the returned r.
  const std::vector<double> norms = read_matrix(space, space.layout().column[small::r_norm2], k);
  for (int c = 0; c < k; ++c) {
    double norm = 0.0;
    for (std::int32_t i = 0; i < n; ++i) norm += r[std::size_t(i) * k + c] * r[std::size_t(i) * k + c];
    CHECK(std::fabs(norms[std::size_t(c)] - norm) <= 2.0 * gamma_bound(n) * norm);
  }
  host[S::q(0)] = q;
  host[S::r] = r;
}

}  // namespace

TEST_CASE("GPU block space: Gram matrices, combinations and column dots against fp64 host sums",
          "[solver][block_space][primitives]") {
  struct Shape {
    int nx, ny, nz;  // rows nx * ny * nz
    int k;
  };
  // k: one column, k % 4 != 0, the solver's 16, a tile count that leaves threads idle (40: 100 tiles), and 64 (two
  // passes of tiles with two right blocks, one matrix per combine launch). Rows from 1 block of rows to hundreds.
  const std::vector<Shape> shapes = {{7, 5, 3, 1}, {13, 11, 7, 3}, {23, 19, 17, 16}, {9, 8, 7, 40},
                                     {31, 29, 23, 16}, {11, 10, 9, 64}, {41, 37, 29, 5}};
  for (const Shape& shape : shapes) {
    const int memory = 4;
    SpaceFixture f(shape.nx, shape.ny, shape.nz, shape.k, memory);
    const int k = f.k();
    const std::int32_t n = f.n();
    const small::SmallLayout& l = f.space.layout();
    INFO("n = " << n << ", k = " << k);

    SECTION("Gram with one right block, two right blocks, and a right block equal to the left") {
      std::vector<double> expected, magnitude;
      f.space.gram(S::z, {{S::q(0), l.matrix[small::gram]}});
      host_gram(f.host[S::z], f.host[S::q(0)], n, k, expected, magnitude);
      CHECK(worst_ratio(read_matrix(f.space, l.matrix[small::gram], k * k), expected, magnitude, n) <= 1.0);

      f.space.gram(S::p(1), {{S::q(1), l.matrix[small::gram]}, {S::r, l.matrix[small::gram2]}});
      host_gram(f.host[S::p(1)], f.host[S::q(1)], n, k, expected, magnitude);
      CHECK(worst_ratio(read_matrix(f.space, l.matrix[small::gram], k * k), expected, magnitude, n) <= 1.0);
      host_gram(f.host[S::p(1)], f.host[S::r], n, k, expected, magnitude);
      CHECK(worst_ratio(read_matrix(f.space, l.matrix[small::gram2], k * k), expected, magnitude, n) <= 1.0);

      f.space.gram(S::z, {{S::q(2), l.matrix[small::gram]}, {S::z, l.matrix[small::gram2]}});
      host_gram(f.host[S::z], f.host[S::q(2)], n, k, expected, magnitude);
      CHECK(worst_ratio(read_matrix(f.space, l.matrix[small::gram], k * k), expected, magnitude, n) <= 1.0);
      host_gram(f.host[S::z], f.host[S::z], n, k, expected, magnitude);
      CHECK(worst_ratio(read_matrix(f.space, l.matrix[small::gram2], k * k), expected, magnitude, n) <= 1.0);
    }

    SECTION("combine: one term, and more terms than one launch stages, with and without accumulation") {
      // Up to six terms from the direction slots, their matrices in the ring of coefficients and the scratch.
      const std::vector<int> sources = {S::p(0), S::q(0), S::p(1), S::q(1), S::p(2), S::q(2)};
      std::vector<std::int64_t> offsets;
      for (int t = 0; t < memory; ++t) offsets.push_back(l.ring(l.ring_coef, t));
      offsets.push_back(l.matrix[small::work]);
      offsets.push_back(l.matrix[small::work2]);
      std::vector<std::vector<double>> matrices;
      for (std::int64_t offset : offsets) {
        matrices.push_back(random_values(std::size_t(k) * k, f.rng));
        f.space.write_small(offset, matrices.back());
      }
      const std::vector<double> factors = {1.0, -1.0, 0.5, -0.25, 3.0, -2.0};
      for (const int terms : {1, 2, 3, 6}) {  // 1 to 3: loads hoisted; 6: one term at a time
        for (const bool accumulate : {false, true}) {
          INFO(terms << " terms, accumulate " << accumulate);
          std::vector<CombineTerm> list;
          for (int t = 0; t < terms; ++t)
            list.push_back({sources[std::size_t(t)], offsets[std::size_t(t)], factors[std::size_t(t)]});
          f.space.set_slot(S::z, f.host[S::z]);
          f.space.combine(S::z, accumulate, list);
          const std::vector<double> gpu = f.space.slot(S::z);
          double worst = 0.0;
          for (std::int64_t i = 0; i < n; ++i)
            for (int c = 0; c < k; ++c) {
              const std::size_t e = std::size_t(i * k + c);
              double sum = accumulate ? f.host[S::z][e] : 0.0, magnitude = std::fabs(sum);
              for (int t = 0; t < terms; ++t)
                for (int m = 0; m < k; ++m) {
                  const double p = factors[std::size_t(t)] *
                                   f.host[std::size_t(sources[std::size_t(t)])][std::size_t(i * k + m)] *
                                   matrices[std::size_t(t)][std::size_t(m + c * k)];
                  sum += p;
                  magnitude += std::fabs(p);
                }
              // Each product rounds twice (factor times matrix entry, then times the source value).
              const double bound = 2.0 * gamma_bound(terms * k + 2.0) * magnitude;
              worst = std::max(worst, std::fabs(gpu[e] - sum) / bound);
            }
          CHECK(worst <= 1.0);
        }
      }
    }

    SECTION("fp64 products: q = A p and r = b - A x (the CSR kernel)") {
      check_products(f.space, f.problem.a, f.host, n, k);
    }

    SECTION("column dots and norms") {
      f.space.column_dots(S::x, S::p(0), l.column[small::dots]);
      f.space.column_norms(S::q(1), l.column[small::r_norm2]);
      const std::vector<double> dots = read_matrix(f.space, l.column[small::dots], k);
      const std::vector<double> norms = read_matrix(f.space, l.column[small::r_norm2], k);
      for (int c = 0; c < k; ++c) {
        double dot = 0.0, dot_magnitude = 0.0, norm = 0.0;
        for (std::int64_t i = 0; i < n; ++i) {
          const std::size_t e = std::size_t(i * k + c);
          const double p = f.host[S::x][e] * f.host[S::p(0)][e];
          dot += p;
          dot_magnitude += std::fabs(p);
          norm += f.host[S::q(1)][e] * f.host[S::q(1)][e];
        }
        CHECK(std::fabs(dots[std::size_t(c)] - dot) <= 2.0 * gamma_bound(n) * dot_magnitude);
        CHECK(std::fabs(norms[std::size_t(c)] - norm) <= 2.0 * gamma_bound(n) * norm);
      }
    }
  }
}

TEST_CASE("GPU block space: fp64 products with cuSPARSE, as the baseline runs them", "[solver][block_space]") {
  SpaceFixture f(19, 13, 11, 7, 1, OuterProduct::cusparse);
  check_products(f.space, f.problem.a, f.host, f.n(), f.k());
}

TEST_CASE("GPU Chebyshev preconditioner against the fp64 host recurrence, with bcsr24 and cuSPARSE products",
          "[solver][block_space]") {
  // k = 5 (padded to 8 columns in the fp32 work blocks); one column with scale 0 (converged: its z must be 0).
  const int k = 5;
  const Problem problem = diffusion_problem(13, 11, 9, k);
  const CsrMatrix& a = problem.a;
  const std::int32_t n = a.rows;
  std::mt19937_64 rng(23);
  const std::vector<double> r = random_values(std::size_t(n) * k, rng);
  const std::vector<double> scale = {0.5, 2.0, 0.0, 1.0, 0.125};
  for (const InnerBackend backend : {InnerBackend::bcsr24, InnerBackend::cusparse_csr_f32}) {
    const InnerMatrix inner = test::make_inner(a, backend, bcsr24::Precision::split);
    const CsrMatrix scaled = scale_symmetric(a, inner.row_scale);
    GpuBlockSpace space(a, inner, k, 1, 4, false, OuterProduct::csr_kernel, cusparse_products());
    space.set_slot(S::r, r);
    space.write_small(space.layout().column[small::scale], scale);
    // Degree 1: no product (z = f / theta); 3: the first two products only; 7: the in-place recurrence after them.
    for (const int degree : {1, 3, 7}) {
      INFO(inner_backend_name(backend) << ", degree " << degree);
      const ChebyshevPolynomial p = make_chebyshev(degree, 0.05, 2.0);
      space.precondition_chebyshev(S::z, S::r, p);
      const std::vector<double> gpu = space.slot(S::z);
      for (int c = 0; c < k; ++c) {
        // The recurrence of ChebyshevPolynomial on f = s r_c scale_c in fp64, then z = s z_m / scale_c.
        const std::size_t rows = static_cast<std::size_t>(n);
        std::vector<double> f(rows), previous(rows, 0.0), z(rows), next(rows);
        for (std::int32_t i = 0; i < n; ++i) {
          f[std::size_t(i)] = inner.row_scale[std::size_t(i)] * r[std::size_t(i) * k + c] * scale[std::size_t(c)];
          z[std::size_t(i)] = f[std::size_t(i)] / p.theta;
        }
        for (const double omega : p.omega) {
          for (std::int32_t i = 0; i < n; ++i) {
            double mz = 0.0;
            for (std::int32_t e = scaled.row_ptr[std::size_t(i)]; e < scaled.row_ptr[std::size_t(i) + 1]; ++e)
              mz += scaled.values[std::size_t(e)] * z[std::size_t(scaled.col_idx[std::size_t(e)])];
            next[std::size_t(i)] = omega * (z[std::size_t(i)] + (f[std::size_t(i)] - mz) / p.theta) +
                                   (1.0 - omega) * previous[std::size_t(i)];
          }
          previous.swap(z);
          z.swap(next);
        }
        double largest = 0.0, worst = 0.0;
        for (std::int32_t i = 0; i < n; ++i) {
          const double host = scale[std::size_t(c)] != 0.0
                                  ? z[std::size_t(i)] * inner.row_scale[std::size_t(i)] / scale[std::size_t(c)]
                                  : 0.0;
          largest = std::max(largest, std::fabs(host));
          worst = std::max(worst, std::fabs(gpu[std::size_t(i) * k + c] - host));
        }
        INFO("column " << c << ": largest " << largest << ", worst difference " << worst);
        if (scale[std::size_t(c)] == 0.0) {
          CHECK(worst == 0.0);
        } else {
          // Split-precision products are accurate to about 2^-21 and the iterates are stored in fp32 (2^-24); over
          // at most 6 products of a recurrence whose factors stay below 2 that is well inside 1e-4 of the largest
          // entry, while a wrong term or buffer is of the order of the entries themselves.
          CHECK(largest > 0.0);
          CHECK(worst <= 1e-4 * largest);
        }
      }
    }
  }
}

TEST_CASE("GPU block solver reaches the tolerance in the host's fp64 check", "[solver][block_space]") {
  // k = 6 with memory 2: the small steps factorise in shared memory; k = 64 with memory 8: the small buffer (~600 KB)
  // exceeds a thread block's shared memory and they run in global memory.
  for (const auto [k, memory, replace_every] : {std::tuple{6, 2, 1}, std::tuple{6, 2, 5}, std::tuple{64, 8, 1}}) {
    INFO("k = " << k << ", memory " << memory << ", residual replaced every " << replace_every << " iterations");
    const Problem problem = diffusion_problem(17, 15, 13, k);
    const InnerMatrix inner = test::make_inner(problem.a, InnerBackend::bcsr24, bcsr24::Precision::split);
    BlockFcgOptions options;
    options.replace_every = replace_every;
    options.memory = memory;
    ChebyshevOptions cheb;
    GpuBlockSpace space(problem.a, inner, problem.k, options.memory, cheb.lanczos_steps, false);
    space.set_slot(S::b, problem.b);
    const LanczosEstimate estimate = run_lanczos(space, cheb.lanczos_steps, cheb.seed);
    const ChebyshevChoice choice =
        choose_chebyshev(estimate, gershgorin_bound(problem.a, inner.row_scale, 1e-6), cheb);
    const BlockFcgResult result = block_fcg(space, &choice.polynomial, options);
    INFO(result.message);
    CHECK(result.stop == BlockStop::converged);
    CHECK(result.max_final_relative <= options.tolerance);
    CHECK(max_relative_residual_host(problem.a, space.slot(S::x), problem.b, problem.k) <= options.tolerance);
    // One status read per iteration; with a recursive residual, one more each time it claims convergence (the true
    // residual then decides), at most once per iteration.
    if (replace_every == 1)
      CHECK(result.synchronizations == result.iterations);
    else
      CHECK(result.synchronizations <= 2 * result.iterations);
  }
}
