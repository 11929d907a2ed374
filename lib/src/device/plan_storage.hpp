// A plan's own device memory (internal): its work lists, counters and workspaces in one allocation, filled with
// one copy. A plan used to make a device allocation and a synchronous copy per list (a dozen for a hybrid plan with
// split bands); the measured plans' tuner builds several plans per choice, and on small matrices those calls cost
// more than the products it times (issue 33). The tuner goes one step further: its candidates' lists share one
// allocation and one copy (place()), and only the plan it keeps gets memory of its own (own_memory()).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include <cuda_runtime_api.h>

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
  /// any stream may read it), then gives every binding its address. Once only, and not after place().
  /// @throw OutOfMemory, CudaError
  void upload();

  /// Device bytes upload() takes: the initialised image, then the workspaces, each entry aligned.
  std::size_t device_bytes() const noexcept { return image_bytes_ + workspace_bytes_; }
  std::size_t image_bytes() const noexcept { return image_bytes_; }
  std::size_t workspace_bytes() const noexcept { return workspace_bytes_; }
  /// The initialised part, as it is copied to the device (until upload() or place()).
  const std::vector<unsigned char>& image() const noexcept { return image_; }
  /// Binds every entry into memory the caller owns: the initialised part at `image_at` (image_bytes()), the
  /// workspaces at `workspace_at` (workspace_bytes()), both aligned to kAlignment. The tuner puts the lists of all
  /// its candidates in one allocation, their images side by side so that one copy fills them. The caller copies
  /// image() to `image_at` on the stream the plan runs on, before its first run, and keeps the memory until
  /// own_memory() or the plan's end. The host image is released. Once only, and not after upload().
  void place(unsigned char* image_at, unsigned char* workspace_at);
  /// Gives placed lists an allocation of their own: one device-to-device copy of the initialised part on `stream`
  /// (after the work queued there, so counters the kernels keep at zero are copied at zero), waited for, and the
  /// entries bound again. Lists never placed are uploaded; lists already owned stay.
  /// @throw OutOfMemory, CudaError
  void own_memory(cudaStream_t stream);

  /// Bytes the lists and workspaces hold (their alignment padding not counted).
  std::size_t bytes() const noexcept { return payload_bytes_; }

  /// Device addresses are aligned to this (16 bytes would do for the kernels' vector loads; 256 keeps every list
  /// on its own cache lines, as cudaMalloc would).
  static constexpr std::size_t kAlignment = 256;
  static std::size_t aligned(std::size_t bytes) { return (bytes + kAlignment - 1) / kAlignment * kAlignment; }

 private:
  enum class Kind { copied, zeroed, workspace };
  struct Entry {
    std::size_t offset = 0, bytes = 0;  // offset: into the initialised image (copied, zeroed) or the workspace
    Kind kind = Kind::copied;
    std::function<void(void*)> bind;
  };
  void add_bytes(const void* data, std::size_t bytes, Kind kind, std::function<void(void*)> bind);

  /// Gives every entry its address: the initialised ones from `image_at`, the workspaces from `workspace_at`.
  void bind_all(unsigned char* image_at, unsigned char* workspace_at) const;

  std::vector<unsigned char> image_;  // the initialised part, as it is copied
  std::size_t image_bytes_ = 0;       // its size (kept when the host copy is released)
  std::size_t workspace_bytes_ = 0;   // the rest
  std::size_t payload_bytes_ = 0;
  std::vector<Entry> entries_;        // kept while placed, to bind them again in own_memory()
  DeviceBuffer<unsigned char> memory_;
  unsigned char* placed_ = nullptr;   // the image in memory the caller owns (place())
};

}  // namespace bcsr24::detail
