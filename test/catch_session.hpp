// The test executables' entry into Catch2, compiled once in catch_impl.cpp.
#pragma once

namespace bcsr24::test {

/// Catch::Session().run(argc, argv): the test run's status, before test_skip.hpp's exit_status.
int run_catch_session(int argc, char* argv[]);

}  // namespace bcsr24::test
