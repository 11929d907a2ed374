// Catch2 main for the GPU tests: exits 77 (ctest: skipped) when no CUDA device of sm_80+ is present, or when
// every test it ran skipped for a missing precondition (test_skip.hpp).
// Catch itself is compiled once, in catch_impl.cpp.
#include <cstdio>

#include "bcsr24/device.hpp"
#include "catch_session.hpp"
#include "test_skip.hpp"

int main(int argc, char* argv[]) {
  const bcsr24::DeviceInfo info = bcsr24::query_device();
  if (!info.available) {
    std::printf("GPU tests skipped: %s\n", info.reason.c_str());
    return 77;
  }
  std::printf("GPU tests on %s (sm_%d, %d SMs)\n", info.name.c_str(), info.compute_capability, info.multiprocessors);
  return bcsr24::test::exit_status(bcsr24::test::run_catch_session(argc, argv));
}
