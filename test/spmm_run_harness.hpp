// The harness of spmm_run's end-to-end tests: run the built program on files a test writes, capture what it
// printed, read its JSON; a matrix whose tile census is known by construction.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

namespace spmm_run_test {

namespace fs = std::filesystem;
using json = nlohmann::json;

/// What one run of spmm_run left behind.
struct AppRun {
  int exit_code = -1;
  std::string out;
  std::string err;
};

/// A fresh directory per test case (mkdtemp), removed with everything in it afterwards; not copyable (it owns the
/// directory through a unique_ptr whose deleter removes it).
class TempDir {
 public:
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "bcsr24_app_test_XXXXXX").string();
    REQUIRE(::mkdtemp(pattern.data()) != nullptr);
    path_.reset(new fs::path(pattern));
  }
  const fs::path& path() const { return *path_; }
  std::string file(const std::string& name) const { return (*path_ / name).string(); }

 private:
  struct RemoveTree {
    void operator()(const fs::path* path) const {
      std::error_code ignored;
      fs::remove_all(*path, ignored);
      delete path;
    }
  };
  std::unique_ptr<fs::path, RemoveTree> path_;
};

std::string read_text(const fs::path& path);
void write_text(const fs::path& path, const std::string& text);
std::vector<std::string> lines_of(const std::string& text);

/// Runs spmm_run with `arguments` (already shell-quoted where needed), capturing stdout and stderr.
AppRun run_spmm(const TempDir& dir, const std::string& arguments);
/// The JSON report of a run that succeeded.
json parse_json(const AppRun& run);
/// Exactly one line on stderr, "spmm_run: error: ...".
void require_one_error_line(const AppRun& run);

/// A 40 x 70 matrix (3 x 3 tiles, the last ones cut) whose census is known by construction:
///   tile (0,0): rows 0-15, columns with c % 4 in {0, 2}: 2:4, 256 nonzeros
///   tile (1,1): rows 16-31, columns 32-63 all set: dense, 512 nonzeros
///   tile (0,2): row 0, columns 64-66: three in one group of 4, so dense, 3 nonzeros
///   tile (2,2): the single entry (39, 69): 2:4, 1 nonzero
/// Values are multiples of 1/4 in [-1.625, 1.375], exact in fp16, never zero.
inline constexpr int kKnownRows = 40, kKnownCols = 70, kKnownNnz = 256 + 512 + 3 + 1;
std::string known_census_mtx();
void check_known_census(const json& report);

/// The first result's error is a number, under the failure limit, within the fp16 bound and near the typical
/// estimate.
void check_cpu_result(const json& report);

}  // namespace spmm_run_test
