// Shared declarations of the bcsr24._bcsr24 extension: one bind_* function per binding file, and the device guard
// the operator and plan bindings both use.
#pragma once

#include <nanobind/nanobind.h>

namespace bcsr24::python {

void bind_errors(nanobind::module_& m);
void bind_cuda_interop(nanobind::module_& m);
void bind_operator(nanobind::module_& m);
void bind_plan(nanobind::module_& m);
void bind_solver(nanobind::module_& m);

/// Makes `device` current for the guard's lifetime when it is not already (device < 0: leaves it alone), and
/// restores the caller's device afterwards. The operator's device copy and its plans live on one device; the
/// caller's current device (CuPy's, torch's) may be another.
class DeviceGuard {
 public:
  explicit DeviceGuard(int device);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = -1;
};

/// The CUDA device current on this thread, or -1 when the runtime has none (no driver, no device). Never throws.
int current_device() noexcept;

}  // namespace bcsr24::python
