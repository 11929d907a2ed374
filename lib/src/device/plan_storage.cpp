// A plan's own device memory in one allocation (device/plan_storage.hpp).
#include "device/plan_storage.hpp"

#include <utility>

#include <cuda_runtime_api.h>

#include "device/cuda_check.hpp"
#include "device/device_memory.hpp"

namespace bcsr24::detail {

void PlanStorage::add_bytes(const void* data, std::size_t bytes, Kind kind, std::function<void(void*)> bind) {
  Entry e;
  e.bytes = bytes;
  e.kind = kind;
  e.bind = std::move(bind);
  payload_bytes_ += bytes;
  if (kind == Kind::workspace) {
    e.offset = workspace_bytes_;
    workspace_bytes_ += aligned(bytes);
  } else {
    e.offset = image_.size();
    if (kind == Kind::copied && bytes > 0) {
      const auto* first = static_cast<const unsigned char*>(data);
      image_.insert(image_.end(), first, first + bytes);  // written once (a resize would zero it first)
    }
    image_.resize(e.offset + aligned(bytes), 0);
  }
  entries_.push_back(std::move(e));
}

void PlanStorage::upload() {
  const std::size_t total = image_.size() + workspace_bytes_;
  if (total > 0) {
    memory_ = DeviceBuffer<unsigned char>(total);
    if (!image_.empty()) {
      BCSR24_CUDA_CHECK(cudaMemcpy(memory_.get(), image_.data(), image_.size(), cudaMemcpyHostToDevice));
      wait_for_device_writes();
    }
  }
  for (const Entry& e : entries_) {
    if (e.bytes == 0) {
      e.bind(nullptr);
      continue;
    }
    const std::size_t at = e.kind == Kind::workspace ? image_.size() + e.offset : e.offset;
    e.bind(memory_.get() + at);
  }
  image_ = std::vector<unsigned char>();
  entries_.clear();
}

}  // namespace bcsr24::detail
