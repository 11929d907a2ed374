// The C++ object behind bcsr24.SparseOperator: the library's SparseOperator and the device its copy lives on.
#pragma once

#include <mutex>

#include "bcsr24/sparse_operator.hpp"

namespace bcsr24::python {

struct PyOperator {
  explicit PyOperator(SparseOperator op) : op(std::move(op)) {}
  SparseOperator op;
  /// The CUDA device of the upload, -1 before it. SparseOperator uploads on whatever device is current; the
  /// binding makes the array's device current for that moment and remembers it, so a later call from another
  /// device is refused with both names instead of launching on the wrong one.
  int device = -1;
  std::mutex device_mutex;

  /// Uploads on `device` (the first call) or checks that it is the device of the upload.
  /// @throw InvalidArgument when the operator lives on another device.
  void ensure_device(int device);
};

}  // namespace bcsr24::python
