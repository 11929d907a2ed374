// bcsr24._bcsr24.Operator: SparseOperator's constructors, reports (as dicts), .b24 save, the stored matrix as
// arrays, the one-device upload, and the CPU reference product. Arrays arrive as raw host pointers that the
// Python side has checked (dtype, contiguity, length) and keeps alive during the call.
#include "operator_binding.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/unique_ptr.h>

#include "bcsr24/error.hpp"
#include "bcsr24/operator_options.hpp"
#include "bcsr24/precision.hpp"
#include "bcsr24/reference.hpp"
#include "bindings.hpp"
#include "report_dicts.hpp"

namespace nb = nanobind;

namespace bcsr24::python {

void PyOperator::ensure_device(int wanted) {
  std::lock_guard<std::mutex> lock(device_mutex);
  if (device >= 0) {
    if (device != wanted)
      throw InvalidArgument("the operator lives on CUDA device " + std::to_string(device) +
                            " (where it was first used) but the array is on device " + std::to_string(wanted) +
                            "; build another operator for that device");
    return;
  }
  DeviceGuard guard(wanted);
  op.upload();
  device = wanted;
}

namespace {

template <typename T>
const T* host_ptr(std::uintptr_t address) {
  return reinterpret_cast<const T*>(address);
}

OperatorOptions make_options(const std::string& precision, const std::string& scaling, const std::string& layout,
                             const std::string& reorder, int threads, const std::string& pattern_values,
                             std::uint64_t seed) {
  OperatorOptions o;
  o.precision = precision_from_name(precision);
  o.scaling = scaling_policy_from_name(scaling);
  o.layout = layout_from_name(layout);
  o.reorder = reordering_from_name(reorder);
  if (threads < 0) throw InvalidArgument("threads must be >= 0 (0: all hardware threads), got " + std::to_string(threads));
  o.threads = threads;
  if (pattern_values == "ones")
    o.matrix_market.pattern_values = MatrixMarketOptions::PatternValues::ones;
  else if (pattern_values == "random")
    o.matrix_market.pattern_values = MatrixMarketOptions::PatternValues::random;
  else
    throw InvalidArgument("pattern_values must be 'ones' or 'random', got '" + pattern_values + "'");
  o.matrix_market.seed = seed;
  return o;
}

template <typename T>
nb::ndarray<nb::numpy, T, nb::ndim<1>> to_numpy(std::vector<T>&& v) {
  auto* owned = new std::vector<T>(std::move(v));
  nb::capsule owner(owned, [](void* p) noexcept { delete static_cast<std::vector<T>*>(p); });
  return nb::ndarray<nb::numpy, T, nb::ndim<1>>(owned->data(), {owned->size()}, owner);
}

}  // namespace

void bind_operator(nb::module_& m) {
  nb::class_<PyOperator>(m, "Operator", "bcsr24::SparseOperator (use bcsr24.SparseOperator)")
      .def_static(
          "from_csr",
          [](std::int32_t rows, std::int32_t cols, std::uintptr_t row_ptr, std::uintptr_t col_idx,
             std::uintptr_t values, bool values_are_float32, const std::string& precision,
             const std::string& scaling, const std::string& layout, const std::string& reorder, int threads) {
            const OperatorOptions options = make_options(precision, scaling, layout, reorder, threads, "ones", 1);
            nb::gil_scoped_release release;
            SparseOperator op =
                values_are_float32
                    ? SparseOperator::from_csr(rows, cols, host_ptr<std::int32_t>(row_ptr),
                                               host_ptr<std::int32_t>(col_idx), host_ptr<float>(values), options)
                    : SparseOperator::from_csr(rows, cols, host_ptr<std::int32_t>(row_ptr),
                                               host_ptr<std::int32_t>(col_idx), host_ptr<double>(values), options);
            return std::make_unique<PyOperator>(std::move(op));
          },
          nb::arg("rows"), nb::arg("cols"), nb::arg("row_ptr"), nb::arg("col_idx"), nb::arg("values"),
          nb::arg("values_are_float32"), nb::arg("precision"), nb::arg("scaling"), nb::arg("layout"),
          nb::arg("reorder"), nb::arg("threads"))
      .def_static(
          "from_file",
          [](const std::string& path, const std::string& precision, const std::string& scaling,
             const std::string& layout, const std::string& reorder, int threads, const std::string& pattern_values,
             std::uint64_t seed) {
            const OperatorOptions options =
                make_options(precision, scaling, layout, reorder, threads, pattern_values, seed);
            nb::gil_scoped_release release;
            return std::make_unique<PyOperator>(SparseOperator::from_file(path, options));
          },
          nb::arg("path"), nb::arg("precision"), nb::arg("scaling"), nb::arg("layout"), nb::arg("reorder"),
          nb::arg("threads"), nb::arg("pattern_values"), nb::arg("seed"))
      .def_prop_ro("rows", [](const PyOperator& o) { return o.op.rows(); })
      .def_prop_ro("cols", [](const PyOperator& o) { return o.op.cols(); })
      .def_prop_ro("nnz", [](const PyOperator& o) { return o.op.nnz(); })
      .def_prop_ro("precision", [](const PyOperator& o) { return std::string(precision_name(o.op.precision())); })
      .def_prop_ro("options", [](const PyOperator& o) { return options_dict(o.op); })
      .def_prop_ro("census", [](const PyOperator& o) { return census_dict(o.op); })
      .def_prop_ro("layout_report", [](const PyOperator& o) { return layout_dict(o.op); })
      .def_prop_ro("scaling_report", [](const PyOperator& o) { return scaling_dict(o.op); })
      .def(
          "save",
          [](const PyOperator& o, const std::string& path) {
            nb::gil_scoped_release release;
            o.op.save(path);
          },
          nb::arg("path"))
      .def(
          "stored_csr",
          [](const PyOperator& o) {
            CsrMatrix a;
            {
              nb::gil_scoped_release release;
              a = o.op.stored_csr();
            }
            return nb::make_tuple(a.rows, a.cols, to_numpy(std::move(a.row_ptr)), to_numpy(std::move(a.col_idx)),
                                  to_numpy(std::move(a.values)));
          },
          "(rows, cols, row_ptr, col_idx, values): the matrix the products multiply by, in the caller's order.")
      .def("ensure_device", &PyOperator::ensure_device, nb::arg("device"), nb::call_guard<nb::gil_scoped_release>(),
           "Uploads on `device` on first use, else checks that the operator lives there.")
      .def_prop_ro("device", [](PyOperator& o) {
        std::lock_guard<std::mutex> lock(o.device_mutex);
        return o.device;
      })
      .def_prop_ro("device_bytes", [](const PyOperator& o) { return o.op.device_bytes(); })
      .def(
          "reference",
          [](const PyOperator& o, std::int32_t n, std::uintptr_t b, std::int64_t ldb, bool b_is_float16,
             std::uintptr_t c, std::int64_t ldc, double alpha, double beta) {
            nb::gil_scoped_release release;
            float* out = reinterpret_cast<float*>(c);
            if (b_is_float16)
              reference_spmm(o.op, n, host_ptr<fp16_t>(b), ldb, out, ldc, alpha, beta);
            else
              reference_spmm(o.op, n, host_ptr<float>(b), ldb, out, ldc, alpha, beta);
          },
          nb::arg("n"), nb::arg("b"), nb::arg("ldb"), nb::arg("b_is_float16"), nb::arg("c"), nb::arg("ldc"),
          nb::arg("alpha"), nb::arg("beta"),
          "bcsr24::reference_spmm on host pointers: C (float32) = alpha A B + beta C.");
}

}  // namespace bcsr24::python
