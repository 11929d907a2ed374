// bcsr24._bcsr24.Plan: SpmmPlan made on the operator's device, run on raw device pointers the Python side has
// checked (shape, dtype, device, strides). run_repeat runs the same product N times in C++, so that the benchmark
// can tell the Python call overhead from the C++ one.
#include <cstdint>
#include <memory>
#include <string>

#include <nanobind/stl/string.h>
#include <nanobind/stl/unique_ptr.h>

#include "bcsr24/error.hpp"
#include "bcsr24/spmm_plan.hpp"
#include "bindings.hpp"
#include "report_dicts.hpp"
#include "operator_binding.hpp"

namespace nb = nanobind;

namespace bcsr24::python {
namespace {

struct PyPlan {
  SpmmPlan plan;
  int device;

  void run(std::uintptr_t b, std::int64_t ldb, std::uintptr_t c, std::int64_t ldc, float alpha, float beta,
           std::uintptr_t stream, std::int64_t count) const {
    DeviceGuard guard(device);
    const Stream s = reinterpret_cast<Stream>(stream);
    if (plan.input() == ElementType::f32) {
      const float* bp = reinterpret_cast<const float*>(b);
      float* cp = reinterpret_cast<float*>(c);
      for (std::int64_t i = 0; i < count; ++i) plan.run(bp, ldb, cp, ldc, alpha, beta, s);
    } else {
      const fp16_t* bp = reinterpret_cast<const fp16_t*>(b);
      void* cp = reinterpret_cast<void*>(c);
      for (std::int64_t i = 0; i < count; ++i) plan.run(bp, ldb, cp, ldc, alpha, beta, s);
    }
  }
};

ElementType input_from_name(const std::string& name) {
  if (name == "float32") return ElementType::f32;
  if (name == "float16") return ElementType::f16;
  if (name == "bfloat16") return ElementType::bf16;
  throw InvalidArgument("b_dtype must be float32, float16 or bfloat16, got " + name);
}

ElementType output_from_name(const std::string& name) {
  if (name == "float32") return ElementType::f32;
  if (name == "float16") return ElementType::f16;
  throw InvalidArgument("out_dtype must be float32 or float16, got " + name);
}

Tuning tuning_from_name(const std::string& name) {
  if (name == tuning_name(Tuning::measure)) return Tuning::measure;
  if (name == tuning_name(Tuning::model)) return Tuning::model;
  throw InvalidArgument("tuning must be measure or model, got " + name);
}

}  // namespace

void bind_plan(nb::module_& m) {
  nb::class_<PyPlan>(m, "Plan", "bcsr24::SpmmPlan (use bcsr24.Plan)")
      .def(
          "run",
          [](const PyPlan& p, std::uintptr_t b, std::int64_t ldb, std::uintptr_t c, std::int64_t ldc, float alpha,
             float beta, std::uintptr_t stream) { p.run(b, ldb, c, ldc, alpha, beta, stream, 1); },
          nb::arg("b"), nb::arg("ldb"), nb::arg("c"), nb::arg("ldc"), nb::arg("alpha"), nb::arg("beta"),
          nb::arg("stream"), nb::call_guard<nb::gil_scoped_release>(),
          "C = alpha A B + beta C on device pointers, enqueued on `stream` (a cudaStream_t as int).")
      .def(
          "run_repeat",
          [](const PyPlan& p, std::int64_t count, std::uintptr_t b, std::int64_t ldb, std::uintptr_t c,
             std::int64_t ldc, float alpha, float beta, std::uintptr_t stream) {
            if (count < 0) throw InvalidArgument("count must be >= 0");
            p.run(b, ldb, c, ldc, alpha, beta, stream, count);
          },
          nb::arg("count"), nb::arg("b"), nb::arg("ldb"), nb::arg("c"), nb::arg("ldc"), nb::arg("alpha"),
          nb::arg("beta"), nb::arg("stream"), nb::call_guard<nb::gil_scoped_release>(),
          "The same product `count` times back to back from C++ (the benchmark's baseline for call overhead).")
      .def_prop_ro("n", [](const PyPlan& p) { return p.plan.n(); })
      .def_prop_ro("device", [](const PyPlan& p) { return p.device; })
      .def_prop_ro("kernel", [](const PyPlan& p) { return std::string(kernel_name(p.plan.kernel())); })
      .def_prop_ro("workspace_bytes", [](const PyPlan& p) { return p.plan.workspace_bytes(); })
      .def_prop_ro("report", [](const PyPlan& p) { return report_dict(p.plan.report()); });

  m.def(
      "make_plan",
      [](PyOperator& op, std::int32_t n, const std::string& kernel, const std::string& b_dtype,
         const std::string& out_dtype, int device, const std::string& tuning, double tuning_budget_ms) {
        PlanOptions options;
        options.input = input_from_name(b_dtype);
        options.output = output_from_name(out_dtype);
        options.tuning = tuning_from_name(tuning);
        if (!(tuning_budget_ms >= 0.0)) throw InvalidArgument("tuning_budget_ms must be >= 0 (0: the default)");
        options.tuning_budget_ms = tuning_budget_ms;
        const KernelKind kind = kernel_from_name(kernel);
        nb::gil_scoped_release release;
        op.ensure_device(device);
        DeviceGuard guard(device);
        return std::make_unique<PyPlan>(PyPlan{op.op.make_plan(n, kind, options), device});
      },
      nb::arg("op"), nb::arg("n"), nb::arg("kernel"), nb::arg("b_dtype"), nb::arg("out_dtype"), nb::arg("device"),
      nb::arg("tuning") = "measure", nb::arg("tuning_budget_ms") = 0.0,
      nb::keep_alive<0, 1>(),  // a plan refers to the operator's device copy: the operator outlives its plans
      "SparseOperator::make_plan on `device` (uploading there first if needed); tuning_budget_ms 0 = the default.");
}

}  // namespace bcsr24::python
