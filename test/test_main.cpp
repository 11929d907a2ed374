// Catch2 main for the CPU test executables: Catch's exit status, or 77 (ctest: skipped) when every test it ran
// skipped for a missing precondition (test_skip.hpp).
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include "test_skip.hpp"

BCSR24_REGISTER_SKIP_COUNTER()

int main(int argc, char* argv[]) { return bcsr24::test::exit_status(Catch::Session().run(argc, argv)); }
