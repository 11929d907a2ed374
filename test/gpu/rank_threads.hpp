// The distributed GPU tests' way to run P ranks in one process: the GPUs there are, one NCCL communicator per GPU
// (ncclCommInitAll over devices 0 .. P-1) and one host thread per rank with its device current.
#pragma once

#include <catch2/catch.hpp>
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cstddef>
#include <exception>
#include <functional>
#include <stdexcept>
#include <thread>
#include <vector>

#include "bcsr24/communicator.hpp"

namespace bcsr24::test {

/// GPUs this process sees (0 where CUDA cannot count them).
inline int device_count() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) return 0;
  return count;
}

/// Communicators of ranks 0 .. ranks-1 on devices 0 .. ranks-1, destroyed with the object.
struct Communicators {
  std::vector<ncclComm_t> comms;
  explicit Communicators(int ranks) : comms(static_cast<std::size_t>(ranks)) {
    std::vector<int> devices(static_cast<std::size_t>(ranks));
    for (int r = 0; r < ranks; ++r) devices[std::size_t(r)] = r;
    REQUIRE(ncclCommInitAll(comms.data(), ranks, devices.data()) == ncclSuccess);
  }
  ~Communicators() {
    for (ncclComm_t c : comms) ncclCommDestroy(c);
  }
  Communicators(const Communicators&) = delete;
  Communicators& operator=(const Communicators&) = delete;
  NcclCommunicator of(int r) const {
    return NcclCommunicator{comms[std::size_t(r)], r, static_cast<int>(comms.size())};
  }
};

/// Runs body(rank) on one thread per rank, each with its device current; rethrows the first exception.
inline void on_every_rank(int ranks, const std::function<void(int)>& body) {
  std::vector<std::exception_ptr> errors(static_cast<std::size_t>(ranks));
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r)
    threads.emplace_back([&, r] {
      try {
        if (cudaSetDevice(r) != cudaSuccess) throw std::runtime_error("cudaSetDevice failed");
        body(r);
      } catch (...) {
        errors[std::size_t(r)] = std::current_exception();
      }
    });
  for (std::thread& t : threads) t.join();
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
}

}  // namespace bcsr24::test
