// What the package needs from the CUDA runtime besides the library itself: the current device, ordering one stream
// after another, output buffers for array libraries that cannot be written in place (JAX), the device of a raw
// pointer, and CUDA events for the benchmark. Linked against the same runtime as libbcsr24 (the static one in the
// wheel); streams and pointers of CuPy, PyTorch or JAX are driver objects of the device's primary context, which
// every runtime in the process shares.
#include <cstdint>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>

#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include "bcsr24/device.hpp"
#include "bcsr24/error.hpp"
#include "bindings.hpp"
#include "report_dicts.hpp"

namespace nb = nanobind;

namespace bcsr24::python {
namespace {

void check(cudaError_t status, const char* call) {
  if (status == cudaSuccess) return;
  (void)cudaGetLastError();  // clear the sticky-free error so the next call starts clean
  if (status == cudaErrorMemoryAllocation) throw OutOfMemory(std::string(call) + ": " + cudaGetErrorString(status));
  throw CudaError(std::string(call) + " failed: " + cudaGetErrorString(status));
}

cudaStream_t as_stream(std::uintptr_t handle) { return reinterpret_cast<cudaStream_t>(handle); }

/// One reusable event per device for stream_wait (cudaStreamWaitEvent captures the event's state at the call).
cudaEvent_t ordering_event(int device) {
  static thread_local std::vector<cudaEvent_t> events;
  if (device < 0) device = 0;
  if (static_cast<std::size_t>(device) >= events.size()) events.resize(static_cast<std::size_t>(device) + 1, nullptr);
  cudaEvent_t& e = events[static_cast<std::size_t>(device)];
  if (e == nullptr) check(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreateWithFlags");
  return e;
}

struct DtypeInfo {
  nb::dlpack::dtype dtype;
  std::size_t bytes;
};
DtypeInfo dtype_from_name(const std::string& name) {
  using nb::dlpack::dtype_code;
  if (name == "float64") return {{std::uint8_t(dtype_code::Float), 64, 1}, 8};
  if (name == "float32") return {{std::uint8_t(dtype_code::Float), 32, 1}, 4};
  if (name == "float16") return {{std::uint8_t(dtype_code::Float), 16, 1}, 2};
  if (name == "bfloat16") return {{std::uint8_t(dtype_code::Bfloat), 16, 1}, 2};
  throw InvalidArgument("device_empty: dtype '" + name + "' is not one of float64, float32, float16, bfloat16");
}

std::string dtype_name(const nb::dlpack::dtype& d) {
  using nb::dlpack::dtype_code;
  const auto code = dtype_code(d.code);
  if (d.lanes != 1) return "vector";
  if (code == dtype_code::Float) return "float" + std::to_string(d.bits);
  if (code == dtype_code::Bfloat && d.bits == 16) return "bfloat16";
  if (code == dtype_code::Int) return "int" + std::to_string(d.bits);
  if (code == dtype_code::UInt) return "uint" + std::to_string(d.bits);
  if (code == dtype_code::Complex) return "complex" + std::to_string(d.bits);
  if (code == dtype_code::Bool) return "bool";
  return "code" + std::to_string(d.code) + "_" + std::to_string(d.bits);
}

/// CUDA events around GPU work, for the benchmark (no array library needed).
class EventTimer {
 public:
  EventTimer() {
    check(cudaEventCreate(&start_), "cudaEventCreate");
    check(cudaEventCreate(&stop_), "cudaEventCreate");
  }
  ~EventTimer() {
    cudaEventDestroy(start_);
    cudaEventDestroy(stop_);
  }
  void start(std::uintptr_t stream) { check(cudaEventRecord(start_, as_stream(stream)), "cudaEventRecord"); }
  void stop(std::uintptr_t stream) { check(cudaEventRecord(stop_, as_stream(stream)), "cudaEventRecord"); }
  float elapsed_ms() {
    check(cudaEventSynchronize(stop_), "cudaEventSynchronize");
    float ms = 0.0f;
    check(cudaEventElapsedTime(&ms, start_, stop_), "cudaEventElapsedTime");
    return ms;
  }

 private:
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
};

}  // namespace

int current_device() noexcept {
  int device = -1;
  if (cudaGetDevice(&device) != cudaSuccess) {
    (void)cudaGetLastError();
    return -1;
  }
  return device;
}

namespace {
/// A machine without a driver or device is not a CUDA failure but an unsupported setting: say why, as the
/// library's own upload does.
void check_device_call(cudaError_t status, const char* call, int device) {
  if (status == cudaErrorNoDevice || status == cudaErrorInsufficientDriver || status == cudaErrorInvalidDevice) {
    (void)cudaGetLastError();
    const DeviceInfo info = query_device();
    throw NotSupported("no usable CUDA device " + std::to_string(device) + ": " +
                       (info.reason.empty() ? cudaGetErrorString(status) : info.reason));
  }
  check(status, call);
}
}  // namespace

DeviceGuard::DeviceGuard(int device) {
  if (device < 0) return;
  int current = -1;
  check_device_call(cudaGetDevice(&current), "cudaGetDevice", device);
  if (current == device) return;
  check_device_call(cudaSetDevice(device), "cudaSetDevice", device);
  previous_ = current;
}

DeviceGuard::~DeviceGuard() {
  if (previous_ >= 0) (void)cudaSetDevice(previous_);
}

void bind_cuda_interop(nb::module_& m) {
  m.def(
      "device_count",
      []() {
        int count = 0;
        if (cudaGetDeviceCount(&count) != cudaSuccess) {
          (void)cudaGetLastError();
          return 0;
        }
        return count;
      },
      "CUDA devices visible to this process (0 without a driver or device). Never raises.");
  m.def("current_device", &current_device, "The CUDA device current on this thread, -1 when there is none.");
  m.def(
      "device_info",
      [](int device) {
        DeviceGuard guard(device);
        return device_info_dict(query_device());
      },
      nb::arg("device") = -1, "bcsr24::query_device() on `device` (-1: the current one) as a dict.");
  m.def(
      "stream_wait",
      [](std::uintptr_t consumer, std::uintptr_t producer, int device) {
        if (consumer == producer) return;
        DeviceGuard guard(device);
        cudaEvent_t e = ordering_event(device < 0 ? current_device() : device);
        check(cudaEventRecord(e, as_stream(producer)), "cudaEventRecord");
        check(cudaStreamWaitEvent(as_stream(consumer), e, 0), "cudaStreamWaitEvent");
      },
      nb::arg("consumer"), nb::arg("producer"), nb::arg("device") = -1,
      "Makes later work on stream `consumer` wait for the work enqueued so far on stream `producer`.");
  m.def(
      "stream_synchronize",
      [](std::uintptr_t stream, int device) {
        DeviceGuard guard(device);
        nb::gil_scoped_release release;
        check(cudaStreamSynchronize(as_stream(stream)), "cudaStreamSynchronize");
      },
      nb::arg("stream"), nb::arg("device") = -1, "Blocks until the work enqueued on `stream` is done.");
  m.def(
      "device_empty",
      [](std::vector<std::size_t> shape, const std::string& dtype, int device) {
        const DtypeInfo info = dtype_from_name(dtype);
        std::size_t count = 1;
        for (std::size_t s : shape) count *= s;
        DeviceGuard guard(device);
        void* ptr = nullptr;
        check(cudaMalloc(&ptr, count == 0 ? 1 : count * info.bytes), "cudaMalloc (output)");
        nb::capsule owner(ptr, [](void* p) noexcept { (void)cudaFree(p); });
        nb::ndarray<> array(ptr, shape.size(), shape.data(), owner, nullptr, info.dtype, nb::device::cuda::value,
                            device < 0 ? current_device() : device);
        return nb::make_tuple(array, reinterpret_cast<std::uintptr_t>(ptr));
      },
      nb::arg("shape"), nb::arg("dtype"), nb::arg("device"),
      "(array, pointer): a C-contiguous device array owned by the array object (DLPack and its deleter free it).");
  m.def(
      "pointer_device",
      [](std::uintptr_t ptr) {
        cudaPointerAttributes attributes{};
        if (cudaPointerGetAttributes(&attributes, reinterpret_cast<const void*>(ptr)) != cudaSuccess) {
          (void)cudaGetLastError();
          return -1;
        }
        return attributes.type == cudaMemoryTypeDevice || attributes.type == cudaMemoryTypeManaged
                   ? attributes.device
                   : -1;
      },
      nb::arg("ptr"), "The CUDA device a device pointer belongs to, -1 for host or unknown memory.");
  m.def(
      "dlpack_view",
      [](nb::ndarray<nb::ro> a) {
        std::vector<std::int64_t> shape, strides;
        for (std::size_t i = 0; i < a.ndim(); ++i) {
          shape.push_back(static_cast<std::int64_t>(a.shape(i)));
          strides.push_back(a.stride(i));
        }
        return nb::make_tuple(reinterpret_cast<std::uintptr_t>(a.data()), shape, strides, dtype_name(a.dtype()),
                              a.device_type(), a.device_id());
      },
      nb::arg("array"),
      "(pointer, shape, strides in elements, dtype name, DLPack device type, device id) of any DLPack array.");
  nb::class_<EventTimer>(m, "EventTimer", "Two CUDA events around work on a stream.")
      .def(nb::init<>())
      .def("start", &EventTimer::start, nb::arg("stream") = 0)
      .def("stop", &EventTimer::stop, nb::arg("stream") = 0)
      .def("elapsed_ms", &EventTimer::elapsed_ms, "Waits for the stop event; milliseconds between the two.");
}

}  // namespace bcsr24::python
