// The harness of spmm_run's end-to-end tests (spmm_run_harness.hpp).
#include "spmm_run_harness.hpp"

#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <utility>

namespace spmm_run_test {

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

void write_text(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  REQUIRE(out.good());
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

AppRun run_spmm(const TempDir& dir, const std::string& arguments) {
  const std::string out_path = dir.file("stdout.txt"), err_path = dir.file("stderr.txt");
  const std::string command =
      "'" + std::string(SPMM_RUN_PATH) + "' " + arguments + " >'" + out_path + "' 2>'" + err_path + "'";
  const int status = std::system(command.c_str());
  AppRun run;
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  run.out = read_text(out_path);
  run.err = read_text(err_path);
  INFO("command: " << command);
  INFO("stderr: " << run.err);
  return run;
}

json parse_json(const AppRun& run) {
  INFO("stdout: " << run.out << "\nstderr: " << run.err);
  REQUIRE(run.exit_code == 0);
  json report;
  REQUIRE_NOTHROW(report = json::parse(run.out));
  return report;
}

void require_one_error_line(const AppRun& run) {
  INFO("stderr: " << run.err);
  const auto lines = lines_of(run.err);
  REQUIRE(lines.size() == 1);
  CHECK(lines[0].rfind("spmm_run: error: ", 0) == 0);
}

std::string known_census_mtx() {
  std::vector<std::pair<int, int>> entries;
  for (int r = 0; r < 16; ++r)
    for (int c = 0; c < 32; ++c)
      if (c % 4 == 0 || c % 4 == 2) entries.emplace_back(r, c);
  for (int r = 16; r < 32; ++r)
    for (int c = 32; c < 64; ++c) entries.emplace_back(r, c);
  for (int c = 64; c < 67; ++c) entries.emplace_back(0, c);
  entries.emplace_back(39, 69);
  std::ostringstream text;
  text << "%%MatrixMarket matrix coordinate real general\n% built by test_spmm_run.cpp\n"
       << kKnownRows << " " << kKnownCols << " " << entries.size() << "\n";
  for (const auto& [r, c] : entries) text << r + 1 << " " << c + 1 << " " << ((r * 7 + c * 3) % 13 - 6.5) / 4 << "\n";
  return text.str();
}

void check_known_census(const json& report) {
  const json& census = report.at("census");
  CHECK(census.at("tile_rows") == 3);
  CHECK(census.at("tile_cols") == 3);
  CHECK(census.at("dense_tiles") == 2);
  CHECK(census.at("sparse24_tiles") == 2);
  CHECK(census.at("zero_tiles") == 5);
  CHECK(census.at("stored_tiles") == 4);
  CHECK(census.at("sparse24_share").get<double>() == Approx(0.5));
  CHECK(census.at("nnz") == kKnownNnz);
  CHECK(census.at("nnz_per_tile").get<double>() == Approx(kKnownNnz / 4.0));
  CHECK(census.at("empty_tile_rows") == 0);
  CHECK(census.at("max_tiles_per_tile_row") == 2);
  CHECK(census.at("dense_bytes").get<std::int64_t>() > 2 * 512 * 2);
  CHECK(census.at("sparse24_bytes").get<std::int64_t>() > 2 * 256 * 2);
  const json& matrix = report.at("matrix");
  CHECK(matrix.at("rows") == kKnownRows);
  CHECK(matrix.at("cols") == kKnownCols);
  CHECK(matrix.at("nnz") == kKnownNnz);
}

void check_cpu_result(const json& report) {
  const json& results = report.at("results");
  REQUIRE(results.size() == 1);
  const json& result = results[0];
  CHECK(result.at("kernel") == "cpu_reference");
  REQUIRE(result.at("rel_error").is_number());
  CHECK(result.at("rel_error").get<double>() < 1e-2);
  CHECK(result.at("within_bound") == true);
  CHECK(result.at("rel_error_bound").get<double>() >= result.at("expected_rel_error").get<double>());
  // The CPU path accumulates in double, so its error is the fp16 storage error of A, which the typical
  // estimate computes exactly (plus float output rounding): the two must agree.
  CHECK(result.at("rel_error").get<double>() <= 2.0 * result.at("expected_rel_error").get<double>() + 1e-7);
  CHECK(result.at("median_ms").get<double>() >= 0.0);
  CHECK(result.at("tflops_thesis").is_number());
}

}  // namespace spmm_run_test
