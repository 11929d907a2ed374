// A plan's own device memory (internal): its work lists, counters and workspaces in one allocation, filled with
// one copy. A plan used to make a device allocation and a synchronous copy per list (a dozen for a hybrid plan with
// split bands); the measured plans' tuner builds several plans per choice, and on small matrices those calls cost
// more than the products it times (issue 33).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "device/device_buffer.hpp"

namespace bcsr24::detail {

class PlanStorage {
 public:
  /// Room for a copy of `host`; `bind` receives its device address at upload() (nullptr where `host` is empty).
  template <typename T, typename Bind>
  void add(const std::vector<T>& host, Bind bind) {
    add_bytes(host.data(), host.size() * sizeof(T), Kind::copied, [bind](void* p) { bind(static_cast<T*>(p)); });
  }
  /// Room for `count` elements set to zero at upload (counters that the kernels keep at zero between runs).
  template <typename T, typename Bind>
  void add_zeroed(std::size_t count, Bind bind) {
    add_bytes(nullptr, count * sizeof(T), Kind::zeroed, [bind](void* p) { bind(static_cast<T*>(p)); });
  }
  /// Room for `count` elements the kernels write before they read (partial sums): not initialised.
  template <typename T, typename Bind>
  void add_workspace(std::size_t count, Bind bind) {
    add_bytes(nullptr, count * sizeof(T), Kind::workspace, [bind](void* p) { bind(static_cast<T*>(p)); });
  }

  /// Makes the one allocation, copies the lists and zeroes in with one copy, waits for it to land (so that work on
  /// any stream may read it), then gives every binding its address. Once only.
  /// @throw OutOfMemory, CudaError
  void upload();

  /// Bytes the lists and workspaces hold (their alignment padding not counted).
  std::size_t bytes() const noexcept { return payload_bytes_; }

 private:
  enum class Kind { copied, zeroed, workspace };
  struct Entry {
    std::size_t offset = 0, bytes = 0;  // offset: into the initialised image (copied, zeroed) or the workspace
    Kind kind = Kind::copied;
    std::function<void(void*)> bind;
  };
  /// Device addresses are aligned to this (16 bytes would do for the kernels' vector loads; 256 keeps every list
  /// on its own cache lines, as cudaMalloc would).
  static constexpr std::size_t kAlignment = 256;
  static std::size_t aligned(std::size_t bytes) { return (bytes + kAlignment - 1) / kAlignment * kAlignment; }
  void add_bytes(const void* data, std::size_t bytes, Kind kind, std::function<void(void*)> bind);

  std::vector<unsigned char> image_;  // the initialised part, as it is copied
  std::size_t workspace_bytes_ = 0;   // the rest
  std::size_t payload_bytes_ = 0;
  std::vector<Entry> entries_;
  DeviceBuffer<unsigned char> memory_;
};

}  // namespace bcsr24::detail
