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
    image_bytes_ = image_.size();
  }
  entries_.push_back(std::move(e));
}

void PlanStorage::bind_all(unsigned char* image_at, unsigned char* workspace_at) const {
  for (const Entry& e : entries_) {
    if (e.bytes == 0) {
      e.bind(nullptr);
      continue;
    }
    e.bind((e.kind == Kind::workspace ? workspace_at : image_at) + e.offset);
  }
}

void PlanStorage::upload() {
  const std::size_t total = device_bytes();
  if (total > 0) {
    memory_ = DeviceBuffer<unsigned char>(total);
    if (!image_.empty()) {
      BCSR24_CUDA_CHECK(cudaMemcpy(memory_.get(), image_.data(), image_.size(), cudaMemcpyHostToDevice));
      wait_for_device_writes();
    }
  }
  bind_all(memory_.get(), memory_.get() + image_bytes_);
  image_ = std::vector<unsigned char>();
  entries_.clear();
}

void PlanStorage::place(unsigned char* image_at, unsigned char* workspace_at) {
  placed_ = image_at;
  bind_all(image_at, workspace_at);
  image_ = std::vector<unsigned char>();
}

void PlanStorage::own_memory(cudaStream_t stream) {
  if (placed_ == nullptr) {
    if (!entries_.empty() || !image_.empty()) upload();  // never placed (nor uploaded: upload() clears both)
    return;
  }
  DeviceBuffer<unsigned char> own(device_bytes());
  if (image_bytes_ > 0) {
    BCSR24_CUDA_CHECK(cudaMemcpyAsync(own.get(), placed_, image_bytes_, cudaMemcpyDeviceToDevice, stream));
    BCSR24_CUDA_CHECK(cudaStreamSynchronize(stream));
  }
  memory_ = std::move(own);
  placed_ = nullptr;
  bind_all(memory_.get(), memory_.get() + image_bytes_);
  entries_.clear();
}

}  // namespace bcsr24::detail
