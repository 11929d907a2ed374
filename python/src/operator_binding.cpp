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
    o.matrix_market.pattern_values = PatternValues::ones;
  else if (pattern_values == "random")
    o.matrix_market.pattern_values = PatternValues::random;
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

nb::dict census_dict(const TileCensus& c) {
  nb::dict d;
  d["tile_rows"] = c.tile_rows;
  d["tile_cols"] = c.tile_cols;
  d["zero_tiles"] = c.zero_tiles;
  d["sparse24_tiles"] = c.sparse24_tiles;
  d["dense_tiles"] = c.dense_tiles;
  d["stored_tiles"] = c.stored_tiles();
  d["sparse24_share"] = c.sparse24_share();
  d["nnz"] = c.nnz;
  d["nnz_per_tile"] = c.nnz_per_tile();
  d["sparse24_nnz"] = c.sparse24_nnz;
  d["dense_nnz"] = c.dense_nnz;
  d["max_tiles_per_tile_row"] = c.max_tiles_per_tile_row;
  d["empty_tile_rows"] = c.empty_tile_rows;
  d["sparse24_bytes"] = c.sparse24_bytes;
  d["dense_bytes"] = c.dense_bytes;
  d["index_bytes"] = c.index_bytes;
  d["row_order_bytes"] = c.row_order_bytes;
  d["total_bytes"] = c.total_bytes();
  d["gathered_b_rows"] = c.gathered_b_rows;
  d["layout"] = layout_name(c.layout);
  d["reordering"] = reordering_name(c.reordering);
  return d;
}

nb::dict layout_dict(const LayoutReport& r) {
  nb::dict d;
  d["layout"] = layout_name(r.layout);
  d["reordering"] = reordering_name(r.reordering);
  d["reason"] = r.reason;
  d["baseline_stored_tiles"] = r.baseline_stored_tiles;
  d["baseline_sparse24_tiles"] = r.baseline_sparse24_tiles;
  d["baseline_bytes"] = r.baseline_bytes;
  d["condensed_tiles_file_order"] = r.condensed_tiles_file_order;
  d["condensed_tiles_rcm"] = r.condensed_tiles_rcm;
  d["reorder_seconds"] = r.reorder_seconds;
  d["baseline_seconds"] = r.baseline_seconds;
  d["pack_seconds"] = r.pack_seconds;
  d["total_seconds"] = r.total_seconds;
  return d;
}

nb::dict scaling_dict(const Fp16Scaling& s) {
  nb::dict d;
  d["exponent"] = s.exponent;
  d["per_row"] = s.per_row;
  d["min_row_exponent"] = s.min_row_exponent;
  d["max_row_exponent"] = s.max_row_exponent;
  d["max_abs"] = s.max_abs;
  d["min_abs_nonzero"] = s.min_abs_nonzero;
  d["overflow_count"] = s.overflow_count;
  d["underflow_count"] = s.underflow_count;
  d["subnormal_count"] = s.subnormal_count;
  d["flushed_count"] = s.flushed_count;
  d["max_flushed_relative"] = s.max_flushed_relative;
  d["max_relative_error"] = s.max_relative_error;
  d["frobenius_relative_error"] = s.frobenius_relative_error;
  return d;
}

nb::dict options_dict(const OperatorOptions& o) {
  nb::dict d;
  d["precision"] = precision_name(o.precision);
  d["scaling"] = scaling_policy_name(o.scaling);
  d["layout"] = layout_name(o.layout);
  d["reorder"] = reordering_name(o.reorder);
  d["threads"] = o.threads;
  d["pattern_values"] = o.matrix_market.pattern_values == PatternValues::ones ? "ones" : "random";
  d["seed"] = o.matrix_market.seed;
  return d;
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
      .def_prop_ro("options", [](const PyOperator& o) { return options_dict(o.op.options()); })
      .def_prop_ro("census", [](const PyOperator& o) { return census_dict(o.op.census()); })
      .def_prop_ro("layout_report", [](const PyOperator& o) { return layout_dict(o.op.layout_report()); })
      .def_prop_ro("scaling_report", [](const PyOperator& o) { return scaling_dict(o.op.scaling()); })
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
