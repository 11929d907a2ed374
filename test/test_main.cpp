// Main of the CPU test executables: Catch's exit status, or 77 (ctest: skipped) when every test it ran skipped for
// a missing precondition (test_skip.hpp). Catch itself is compiled once, in catch_impl.cpp.
#include "catch_session.hpp"
#include "test_skip.hpp"

int main(int argc, char* argv[]) { return bcsr24::test::exit_status(bcsr24::test::run_catch_session(argc, argv)); }
