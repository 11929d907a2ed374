// bcsr24._bcsr24.SpdSolver: bcsr24::solvers::SpdSolver from CSR arrays, its GPU solve on device pointers (fp64 or
// fp32, on the caller's stream and device) and its host solve on NumPy buffers. Arrays arrive as raw pointers that
// the Python side (bcsr24.linalg) has checked and keeps alive during the call; reports come back as dicts.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>

#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/unique_ptr.h>
#include <nanobind/stl/vector.h>

#include "bcsr24/solvers.hpp"
#include "bindings.hpp"

namespace nb = nanobind;

namespace bcsr24::python {

namespace {

using solvers::SolveOptions;
using solvers::SolveReport;
using solvers::SpdSolver;

/// The options a solve and an eigenvalue computation share (SolveOptions, EigenOptions): the iteration and time
/// limits and the preconditioner, whose names are checked here.
template <class Options>
Options run_options(int max_iterations, double time_limit, const std::string& preconditioner, int degree,
                    const std::string& inner_precision) {
  Options o;
  o.max_iterations = max_iterations;
  o.time_limit_seconds = time_limit;
  o.preconditioner = solvers::preconditioner_from_name(preconditioner);
  o.chebyshev_degree = degree;
  o.inner_precision = precision_from_name(inner_precision);
  return o;
}

SolveOptions make_options(double rtol, double atol, int max_iterations, double time_limit, bool initial_guess,
                          const std::string& preconditioner, int degree, const std::string& inner_precision) {
  auto o = run_options<SolveOptions>(max_iterations, time_limit, preconditioner, degree, inner_precision);
  o.rtol = rtol;
  o.atol = atol;
  o.initial_guess = initial_guess;
  return o;
}

/// The fields a solve's and an eigenvalue computation's reports share (SolveReport, EigenReport), under the same
/// keys: why and when it stopped, the residuals' history and the time and products it took.
template <class Report>
nb::dict run_dict(const Report& r) {
  nb::dict d;
  d["stop"] = solvers::stop_reason_name(r.stop);
  d["message"] = r.message;
  d["iterations"] = r.iterations;
  d["residual_norm"] = r.residual_norm;
  d["history"] = r.history;
  d["seconds"] = r.seconds;
  d["setup_seconds"] = r.setup_seconds;
  d["spectrum_seconds"] = r.spectrum_seconds;
  d["product_seconds"] = r.product_seconds;
  d["product_share"] = r.product_share;
  d["products"] = r.products;
  d["host_synchronizations"] = r.host_synchronizations;
  d["preconditioner"] = solvers::preconditioner_name(r.preconditioner);
  return d;
}

nb::dict report_dict(const SolveReport& r) {
  nb::dict d = run_dict(r);
  d["relative_residual"] = r.relative_residual;
  d["fallback_iteration"] = r.fallback_iteration;
  d["chebyshev"] = r.chebyshev;
  d["plan"] = r.plan;
  return d;
}

solvers::EigenOptions eigen_options(double tol, int max_iterations, bool largest, double time_limit,
                                    const std::string& preconditioner, int degree, const std::string& inner_precision) {
  auto o = run_options<solvers::EigenOptions>(max_iterations, time_limit, preconditioner, degree, inner_precision);
  o.tol = tol;
  o.largest = largest;
  return o;
}

nb::dict eigen_dict(const solvers::EigenReport& r) {
  nb::dict d = run_dict(r);
  d["converged_pairs"] = r.converged;
  d["eigenvalues"] = r.eigenvalues;
  d["norm_estimate"] = r.norm_estimate;
  return d;
}

/// A host CSR matrix from canonical arrays (int32 indices, float64 values) at host addresses, copied.
CsrMatrix csr_from_pointers(std::int32_t rows, std::int32_t cols, std::uintptr_t row_ptr, std::uintptr_t col_idx,
                            std::uintptr_t values) {
  CsrMatrix a;
  a.rows = rows;
  a.cols = cols;
  const auto* rp = reinterpret_cast<const std::int32_t*>(row_ptr);
  const std::size_t nnz = rows > 0 ? std::size_t(rp[rows]) : 0;
  a.row_ptr.assign(rp, rp + rows + 1);
  a.col_idx.assign(reinterpret_cast<const std::int32_t*>(col_idx), reinterpret_cast<const std::int32_t*>(col_idx) + nnz);
  a.values.assign(reinterpret_cast<const double*>(values), reinterpret_cast<const double*>(values) + nnz);
  return a;
}

}  // namespace

void bind_solver(nb::module_& m) {
  m.def(
      "copy_rows",
      [](std::uintptr_t dst, int ldd, std::uintptr_t src, int lds, std::int32_t rows, int cols, int element_bytes,
         int device, std::uintptr_t stream) {
        nb::gil_scoped_release release;
        DeviceGuard guard(device);
        const std::size_t element = std::size_t(element_bytes);
        const cudaError_t status = cudaMemcpy2DAsync(
            reinterpret_cast<void*>(dst), std::size_t(ldd) * element, reinterpret_cast<const void*>(src),
            std::size_t(lds) * element, std::size_t(cols) * element, std::size_t(rows), cudaMemcpyDeviceToDevice,
            reinterpret_cast<cudaStream_t>(stream));
        if (status != cudaSuccess) throw CudaError(std::string("copy_rows: ") + cudaGetErrorString(status));
      },
      nb::arg("dst"), nb::arg("ldd"), nb::arg("src"), nb::arg("lds"), nb::arg("rows"), nb::arg("cols"),
      nb::arg("element_bytes"), nb::arg("device"), nb::arg("stream"),
      "Copies rows x cols elements between device blocks of leading dimensions ldd and lds, on `stream`.");
  nb::class_<SpdSolver>(m, "SpdSolver", "bcsr24::solvers::SpdSolver (use bcsr24.linalg.SpdSolver)")
      .def_static(
          "from_csr",
          [](std::int32_t rows, std::int32_t cols, std::uintptr_t row_ptr, std::uintptr_t col_idx,
             std::uintptr_t values, double symmetry_tolerance, int threads) {
            const CsrMatrix a = csr_from_pointers(rows, cols, row_ptr, col_idx, values);
            solvers::SpdOptions options;
            options.symmetry_tolerance = symmetry_tolerance;
            options.threads = threads;
            nb::gil_scoped_release release;
            return std::make_unique<SpdSolver>(a, options);
          },
          nb::arg("rows"), nb::arg("cols"), nb::arg("row_ptr"), nb::arg("col_idx"), nb::arg("values"),
          nb::arg("symmetry_tolerance"), nb::arg("threads"),
          "From canonical CSR arrays (int32 indices, sorted unique columns, float64 values) on the host.")
      .def_prop_ro("rows", &SpdSolver::rows)
      .def_prop_ro("nnz", &SpdSolver::nnz)
      .def_prop_ro("asymmetry", &SpdSolver::asymmetry)
      .def(
          "solve",
          [](SpdSolver& s, std::uintptr_t b, int ldb, std::uintptr_t x, int ldx, int k, bool float32, int device,
             std::uintptr_t stream, double rtol, double atol, int max_iterations, double time_limit,
             bool initial_guess, const std::string& preconditioner, int degree, const std::string& inner_precision) {
            const SolveOptions o = make_options(rtol, atol, max_iterations, time_limit, initial_guess, preconditioner,
                                                degree, inner_precision);
            SolveReport r;
            {
              nb::gil_scoped_release release;
              DeviceGuard guard(device);
              const Stream st = reinterpret_cast<Stream>(stream);
              r = float32 ? s.solve(reinterpret_cast<const float*>(b), ldb, reinterpret_cast<float*>(x), ldx, k, o, st)
                          : s.solve(reinterpret_cast<const double*>(b), ldb, reinterpret_cast<double*>(x), ldx, k, o,
                                    st);
            }
            return report_dict(r);
          },
          nb::arg("b"), nb::arg("ldb"), nb::arg("x"), nb::arg("ldx"), nb::arg("k"), nb::arg("float32"),
          nb::arg("device"), nb::arg("stream"), nb::arg("rtol"), nb::arg("atol"), nb::arg("max_iterations"),
          nb::arg("time_limit"), nb::arg("initial_guess"), nb::arg("preconditioner"), nb::arg("degree"),
          nb::arg("inner_precision"), "SpdSolver::solve on device pointers; the report as a dict.")
      .def(
          "solve_host",
          [](SpdSolver& s, std::uintptr_t b, int ldb, std::uintptr_t x, int ldx, int k, double rtol, double atol,
             int max_iterations, double time_limit, bool initial_guess, const std::string& preconditioner, int degree,
             const std::string& inner_precision) {
            const SolveOptions o = make_options(rtol, atol, max_iterations, time_limit, initial_guess, preconditioner,
                                                degree, inner_precision);
            SolveReport r;
            {
              nb::gil_scoped_release release;
              r = s.solve_host(reinterpret_cast<const double*>(b), ldb, reinterpret_cast<double*>(x), ldx, k, o);
            }
            return report_dict(r);
          },
          nb::arg("b"), nb::arg("ldb"), nb::arg("x"), nb::arg("ldx"), nb::arg("k"), nb::arg("rtol"), nb::arg("atol"),
          nb::arg("max_iterations"), nb::arg("time_limit"), nb::arg("initial_guess"), nb::arg("preconditioner"),
          nb::arg("degree"), nb::arg("inner_precision"), "SpdSolver::solve_host on float64 host pointers.")
      .def(
          "eigen",
          [](SpdSolver& s, std::uintptr_t x, int ldx, int k, bool on_host, int device, std::uintptr_t stream,
             double tol, int max_iterations, bool largest, double time_limit, const std::string& preconditioner,
             int degree, const std::string& inner_precision, std::int32_t m_rows, std::uintptr_t m_row_ptr,
             std::uintptr_t m_col_idx, std::uintptr_t m_values) {
            const solvers::EigenOptions o =
                eigen_options(tol, max_iterations, largest, time_limit, preconditioner, degree, inner_precision);
            solvers::EigenReport r;
            {
              nb::gil_scoped_release release;
              double* xx = reinterpret_cast<double*>(x);
              const bool generalized = m_rows >= 0;
              const CsrMatrix mass =
                  generalized ? csr_from_pointers(m_rows, m_rows, m_row_ptr, m_col_idx, m_values) : CsrMatrix{};
              if (on_host) {
                r = generalized ? s.eigenpairs_host(mass, xx, ldx, k, o) : s.eigenpairs_host(xx, ldx, k, o);
              } else {
                DeviceGuard guard(device);
                const Stream st = reinterpret_cast<Stream>(stream);
                r = generalized ? s.eigenpairs(mass, xx, ldx, k, o, st) : s.eigenpairs(xx, ldx, k, o, st);
              }
            }
            return eigen_dict(r);
          },
          nb::arg("x"), nb::arg("ldx"), nb::arg("k"), nb::arg("on_host"), nb::arg("device"), nb::arg("stream"),
          nb::arg("tol"), nb::arg("max_iterations"), nb::arg("largest"), nb::arg("time_limit"),
          nb::arg("preconditioner"), nb::arg("degree"), nb::arg("inner_precision"), nb::arg("m_rows") = -1,
          nb::arg("m_row_ptr") = 0, nb::arg("m_col_idx") = 0, nb::arg("m_values") = 0,
          "SpdSolver::eigenpairs (or eigenpairs_host) on a float64 block, overwritten by the eigenvectors; with M's "
          "CSR arrays (m_rows >= 0, host addresses) the generalized problem A x = lambda M x.");
}

}  // namespace bcsr24::python
