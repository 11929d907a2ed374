// Catch2's implementation (the single header's CATCH_IMPL part) and the skip counter's listener, compiled once for
// every test executable: it is the largest translation unit of the tests (~18 s on a loaded 16-core build), so the
// CPU and GPU mains (test_main.cpp, gpu/gpu_test_main.cpp) call run_catch_session instead of including it.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include "catch_session.hpp"
#include "test_skip.hpp"

BCSR24_REGISTER_SKIP_COUNTER()

namespace bcsr24::test {

int run_catch_session(int argc, char* argv[]) { return Catch::Session().run(argc, argv); }

}  // namespace bcsr24::test
