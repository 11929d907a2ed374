// Catch2 main for the GPU tests: exits 77 (ctest: skipped) when no CUDA device of sm_80+ is present, or when
// every test it ran skipped for a missing precondition (test_skip.hpp).
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cstdio>

#include "bcsr24/device.hpp"
#include "test_skip.hpp"

BCSR24_REGISTER_SKIP_COUNTER()

int main(int argc, char* argv[]) {
  const bcsr24::DeviceInfo info = bcsr24::query_device();
  if (!info.available) {
    std::printf("GPU tests skipped: %s\n", info.reason.c_str());
    return 77;
  }
  std::printf("GPU tests on %s (sm_%d, %d SMs)\n", info.name.c_str(), info.compute_capability, info.multiprocessors);
  return bcsr24::test::exit_status(Catch::Session().run(argc, argv));
}
