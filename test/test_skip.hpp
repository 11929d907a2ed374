// Visible skips for Catch2 2.13, which has no SKIP(): a test whose precondition is missing (the shared data, a
// compute capability 9.0 GPU, a second GPU) calls BCSR24_SKIP(reason) and returns. Such tests carry a hidden
// condition tag ([.needs_data], [.needs_sm90], [.needs_2gpus]): the executable's plain run leaves them out, and
// each tag has its own CTest entry (test/CMakeLists.txt) whose run exits 77 (SKIP_RETURN_CODE: ctest reports
// "skipped") when every test it ran skipped. A skip is therefore never counted as a pass.
#pragma once

#include <catch2/catch.hpp>

#include <cstdint>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

namespace bcsr24::test {

/// The tests that ran and the skips they reported, for the main's exit status.
struct SkipLog {
  std::int64_t tests_started = 0;
  std::vector<std::string> skipped;  ///< "test name: reason"
};
inline SkipLog& skip_log() {
  static SkipLog log;
  return log;
}

inline void record_skip(const std::string& reason) {
  skip_log().skipped.push_back(Catch::getResultCapture().getCurrentTestName() + ": " + reason);
  WARN("skipped: " << reason);
}

/// The exit status of a test executable: Catch's (the failures) when something failed or a test ran to the end;
/// 77 when every test that ran skipped. Prints the skips either way.
inline int exit_status(int failures) {
  const SkipLog& log = skip_log();
  for (const std::string& s : log.skipped) std::printf("SKIPPED %s\n", s.c_str());
  if (failures == 0 && !log.skipped.empty() && std::int64_t(log.skipped.size()) == log.tests_started) return 77;
  return failures;
}

}  // namespace bcsr24::test

/// Records why the current test cannot run here and leaves it (use in the TEST_CASE's body, not in a SECTION).
#define BCSR24_SKIP(reason)                         \
  do {                                              \
    std::ostringstream bcsr24_skip_reason_;         \
    bcsr24_skip_reason_ << reason;                  \
    ::bcsr24::test::record_skip(bcsr24_skip_reason_.str()); \
    return;                                         \
  } while (0)

/// For the file that defines the Catch2 session (CATCH_CONFIG_RUNNER): counts the test cases that start.
#define BCSR24_REGISTER_SKIP_COUNTER()                                              \
  namespace {                                                                       \
  struct Bcsr24TestCounter : Catch::TestEventListenerBase {                         \
    using TestEventListenerBase::TestEventListenerBase;                             \
    void testCaseStarting(Catch::TestCaseInfo const& info) override {               \
      TestEventListenerBase::testCaseStarting(info);                                \
      ++::bcsr24::test::skip_log().tests_started;                                   \
    }                                                                               \
  };                                                                                \
  }                                                                                 \
  CATCH_REGISTER_LISTENER(Bcsr24TestCounter)
