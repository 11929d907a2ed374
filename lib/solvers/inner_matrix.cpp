// The inner operator's matrix and the diagonal scalings (inner_matrix.hpp).
#include "inner_matrix.hpp"

#include <chrono>
#include <cmath>

#include "bcsr24/error.hpp"
#include "format/name_table.hpp"

namespace bcsr24::solver {

namespace {

constexpr bcsr24::detail::Named<InnerBackend> kBackends[] = {{InnerBackend::bcsr24, "bcsr24"},
                                                             {InnerBackend::cusparse_csr_f32, "cusparse_csr_f32"},
                                                             {InnerBackend::none, "none"}};
/// The backends a name may ask for: every one but `none`.
constexpr bcsr24::detail::Named<InnerBackend> kChoosableBackends[] = {kBackends[0], kBackends[1]};

}  // namespace

const char* inner_backend_name(InnerBackend backend) noexcept {
  return bcsr24::detail::name_in(kBackends, backend, "unknown");
}

InnerBackend inner_backend_from_name(const std::string& name) {
  return bcsr24::detail::value_in(kChoosableBackends, name, "inner backend");
}

namespace {

/// The diagonal of rows first_row .. first_row + a.rows - 1 of a matrix (a holds those rows, global columns).
std::vector<double> diagonal(const CsrMatrix& a, std::int32_t first_row = 0) {
  std::vector<double> d(static_cast<std::size_t>(a.rows), 0.0);
  for (std::int32_t i = 0; i < a.rows; ++i) {
    for (std::int32_t p = a.row_ptr[i]; p < a.row_ptr[i + 1]; ++p)
      if (a.col_idx[p] == first_row + i) d[static_cast<std::size_t>(i)] = a.values[p];
    if (!(d[static_cast<std::size_t>(i)] > 0.0))
      throw InvalidArgument("row " + std::to_string(first_row + i) + " has diagonal " +
                            std::to_string(d[static_cast<std::size_t>(i)]) + ": an SPD matrix needs a positive diagonal");
  }
  return d;
}

}  // namespace

std::vector<double> jacobi_scale(const CsrMatrix& a) {
  std::vector<double> s = diagonal(a);
  for (double& v : s) v = 1.0 / std::sqrt(v);
  return s;
}

std::vector<double> inverse_diagonal(const CsrMatrix& a, std::int32_t first_row) {
  std::vector<double> s = diagonal(a, first_row);
  for (double& v : s) v = 1.0 / v;
  return s;
}

std::vector<double> inverse_positive_diagonal(const CsrMatrix& a) {
  std::vector<double> s(static_cast<std::size_t>(a.rows), 0.0);
  for (std::int32_t i = 0; i < a.rows; ++i)
    for (std::int32_t p = a.row_ptr[i]; p < a.row_ptr[i + 1]; ++p)
      if (a.col_idx[p] == i && a.values[p] > 0.0) s[static_cast<std::size_t>(i)] = 1.0 / a.values[p];
  return s;
}

CsrMatrix scale_symmetric(const CsrMatrix& a, const std::vector<double>& s) {
  CsrMatrix out = a;
  for (std::int32_t i = 0; i < a.rows; ++i)
    for (std::int32_t p = a.row_ptr[i]; p < a.row_ptr[i + 1]; ++p)
      out.values[p] = s[static_cast<std::size_t>(i)] * a.values[p] * s[static_cast<std::size_t>(a.col_idx[p])];
  return out;
}

InnerMatrix prepare_inner_matrix(const CsrMatrix& a, InnerBackend backend, bool jacobi_scaling,
                                 const OperatorOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  InnerMatrix inner;
  inner.backend = backend;
  if (jacobi_scaling) inner.row_scale = jacobi_scale(a);
  const CsrMatrix& source = jacobi_scaling ? (inner.csr = scale_symmetric(a, inner.row_scale)) : a;
  if (backend == InnerBackend::bcsr24) {
    inner.op = std::make_shared<const SparseOperator>(SparseOperator::from_csr(source, options));
    inner.csr = CsrMatrix{};
  } else if (!jacobi_scaling) {
    inner.csr = a;
  }
  inner.preprocess_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return inner;
}

}  // namespace bcsr24::solver
