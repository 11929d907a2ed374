// End-to-end tests of the spmm_run program: command line, errors, census, JSON and the CPU path (no GPU needed).
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

/// What one run of spmm_run left behind.
struct AppRun {
  int exit_code = -1;
  std::string out;
  std::string err;
};

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

/// A fresh directory per test case, removed afterwards.
class TempDir {
 public:
  TempDir() {
    static std::atomic<int> counter{0};
    path_ = fs::temp_directory_path() /
            ("bcsr24_app_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ignored;
    fs::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const fs::path& path() const { return path_; }
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  fs::path path_;
};

/// Runs spmm_run with `arguments` (already shell-quoted where needed), capturing stdout and stderr.
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

/// A 40 x 70 matrix (3 x 3 tiles, the last ones cut) whose census is known by construction:
///   tile (0,0): rows 0-15, columns with c % 4 in {0, 2}: 2:4, 256 nonzeros
///   tile (1,1): rows 16-31, columns 32-63 all set: dense, 512 nonzeros
///   tile (0,2): row 0, columns 64-66: three in one group of 4, so dense, 3 nonzeros
///   tile (2,2): the single entry (39, 69): 2:4, 1 nonzero
/// Values are multiples of 1/4 in [-1.625, 1.375], exact in fp16, never zero.
constexpr int kKnownRows = 40, kKnownCols = 70, kKnownNnz = 256 + 512 + 3 + 1;

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

/// The first result's error is a number, under the failure limit, within the fp16 bound and near the typical
/// estimate.
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

}  // namespace

TEST_CASE("spmm_run --help documents the options and exits 0", "[app]") {
  TempDir dir;
  const AppRun run = run_spmm(dir, "--help");
  REQUIRE(run.exit_code == 0);
  for (const char* option : {"--nmult", "--n ", "--xdys", "--size", "--kernel", "--reps", "--warmup", "--check",
                             "--no-check", "--scaling", "--pattern-values", "--seed", "--json", "--save",
                             "--fp16-out", "--alpha", "--beta", "--cpu-only"}) {
    INFO("option " << option);
    CHECK(run.out.find(option) != std::string::npos);
  }
  CHECK(run.out.find("split_pipelined") != std::string::npos);
}

TEST_CASE("spmm_run rejects bad command lines with one line and exit code 2", "[app]") {
  TempDir dir;
  const std::string matrix = dir.file("known.mtx");
  write_text(matrix, known_census_mtx());
  const std::vector<std::string> bad_command_lines = {
      "--bogus-option",
      "",                                          // neither a file nor --xdys
      "'" + matrix + "' --xdys 10d5s",             // both
      "'" + matrix + "' --nmult 0",
      "'" + matrix + "' --nmult 2 --n 16",         // --n and --nmult exclude each other
      "'" + matrix + "' --kernel no_such_kernel",
      "'" + matrix + "' --scaling sometimes",
      "'" + matrix + "' --size 64",                // --size needs --xdys
      "'" + matrix + "' --reps 0",
      "'" + matrix + "' --alpha nan",
  };
  for (const std::string& arguments : bad_command_lines) {
    INFO("arguments: " << arguments);
    const AppRun run = run_spmm(dir, arguments);
    CHECK(run.exit_code == 2);
    require_one_error_line(run);
    CHECK(run.out.empty());
  }
}

TEST_CASE("spmm_run reports a missing file with its name and exit code 1", "[app]") {
  TempDir dir;
  for (const std::string name : {"does_not_exist.mtx", "does_not_exist.b24"}) {
    const AppRun run = run_spmm(dir, "'" + dir.file(name) + "' --cpu-only");
    CHECK(run.exit_code == 1);
    require_one_error_line(run);
    CHECK(run.err.find(name) != std::string::npos);
  }
}

TEST_CASE("spmm_run reports a malformed Matrix Market file with file and line, exit code 1", "[app]") {
  TempDir dir;
  const std::vector<std::pair<std::string, std::string>> malformed = {
      {"row_out_of_range.mtx", "%%MatrixMarket matrix coordinate real general\n3 3 2\n1 1 1.0\n4 1 2.0\n"},
      {"not_a_banner.mtx", "hello world\n3 3 1\n1 1 1\n"},
      {"truncated.mtx", "%%MatrixMarket matrix coordinate real general\n3 3 5\n1 1 1.0\n"},
      {"bad_number.mtx", "%%MatrixMarket matrix coordinate real general\n3 3 1\n1 1 one\n"},
  };
  for (const auto& [name, content] : malformed) {
    INFO("file " << name);
    write_text(dir.path() / name, content);
    const AppRun run = run_spmm(dir, "'" + dir.file(name) + "' --cpu-only");
    CHECK(run.exit_code == 1);
    require_one_error_line(run);
    CHECK(run.err.find(name + ":") != std::string::npos);
  }
}

TEST_CASE("spmm_run rejects a corrupted .b24 file with exit code 1", "[app]") {
  TempDir dir;
  write_text(dir.path() / "garbage.b24", std::string(100, 'x'));
  const AppRun run = run_spmm(dir, "'" + dir.file("garbage.b24") + "' --cpu-only");
  CHECK(run.exit_code == 1);
  require_one_error_line(run);
}

TEST_CASE("spmm_run --cpu-only --json gives the census and a checked CPU result", "[app]") {
  TempDir dir;
  const std::string matrix = dir.file("known.mtx");
  write_text(matrix, known_census_mtx());
  // The known census is that of the thesis layout (aligned tiles, file order).
  const json report = parse_json(run_spmm(dir, "'" + matrix + "' --cpu-only --json --nmult 2 --layout aligned --reorder none"));
  check_known_census(report);
  CHECK(report.at("layout").at("layout") == "aligned");
  CHECK(report.at("layout").at("reason") == "requested");
  check_cpu_result(report);
  CHECK(report.at("gpu").at("reason").get<std::string>().find("--cpu-only") != std::string::npos);
  CHECK(report.at("multiply").at("n") == 16);
  CHECK(report.at("multiply").at("nmult") == 2);
  CHECK(report.at("scaling").at("scaled") == false);
  CHECK(report.at("scaling").at("flushed_count") == 0);
  CHECK(report.at("preprocessing").at("read_s").get<double>() >= 0.0);
  CHECK(report.at("preprocessing").at("convert_s").get<double>() >= 0.0);
  CHECK(report.at("check").at("reference") == "original matrix");
}

TEST_CASE("spmm_run human output shows the census and says the GPU kernels were skipped", "[app]") {
  TempDir dir;
  const std::string matrix = dir.file("known.mtx");
  write_text(matrix, known_census_mtx());

  const AppRun cpu_only = run_spmm(dir, "'" + matrix + "' --cpu-only --n 8 --layout aligned --reorder none");
  REQUIRE(cpu_only.exit_code == 0);
  CHECK(cpu_only.out.find("GPU kernels skipped: --cpu-only") != std::string::npos);
  CHECK(cpu_only.out.find("cpu_reference") != std::string::npos);
  CHECK(cpu_only.out.find("2 dense + 2 2:4") != std::string::npos);
  CHECK(cpu_only.err.empty());  // no progress lines when stderr is not a terminal

  // Without --cpu-only the GPU path runs only where a device exists; elsewhere the skip must be said.
  const json report = parse_json(run_spmm(dir, "'" + matrix + "' --json --n 8 --reps 3 --warmup 1"));
  const AppRun human = run_spmm(dir, "'" + matrix + "' --n 8 --reps 3 --warmup 1");
  REQUIRE(human.exit_code == 0);
  if (!report.at("gpu").at("available").get<bool>()) {
    CHECK(human.out.find("GPU kernels skipped") != std::string::npos);
    check_cpu_result(report);
  } else {
    CHECK(human.out.find("GPU kernels skipped") == std::string::npos);
    const json& result = report.at("results").at(0);
    CHECK(result.at("kernel") == "auto");
    // The plan is carried: every stored nonzero is on 2:4 tiles, dense tiles or CSR.
    const json& plan = result.at("plan");
    CHECK(plan.at("sparse24_nnz").get<std::int64_t>() + plan.at("dense_nnz").get<std::int64_t>() +
              plan.at("csr_nnz").get<std::int64_t>() ==
          report.at("matrix").at("nnz").get<std::int64_t>());
    CHECK(human.out.find("plan        auto:") != std::string::npos);
    REQUIRE(result.at("rel_error").is_number());
    CHECK(result.at("rel_error").get<double>() < 1e-2);
  }
}

TEST_CASE("spmm_run checks alpha and beta on the CPU path", "[app]") {
  TempDir dir;
  const std::string matrix = dir.file("known.mtx");
  write_text(matrix, known_census_mtx());
  const json report =
      parse_json(run_spmm(dir, "'" + matrix + "' --cpu-only --json --n 13 --alpha -2 --beta 0.5 --seed 7"));
  check_cpu_result(report);
  CHECK(report.at("multiply").at("n") == 13);
  CHECK(report.at("multiply").at("nmult").is_null());
  CHECK(report.at("multiply").at("beta") == 0.5);
}

TEST_CASE("spmm_run --save writes a .b24 that spmm_run reads back with the same census", "[app]") {
  TempDir dir;
  const std::string matrix = dir.file("known.mtx"), saved = dir.file("known.b24");
  write_text(matrix, known_census_mtx());
  const json first =
      parse_json(run_spmm(dir, "'" + matrix + "' --cpu-only --json --layout aligned --reorder none --save '" + saved + "'"));
  REQUIRE(fs::exists(saved));
  CHECK(first.at("preprocessing").at("saved_to") == saved);
  const json second = parse_json(run_spmm(dir, "'" + saved + "' --cpu-only --json"));
  check_known_census(second);
  check_cpu_result(second);
  CHECK(second.at("matrix").at("source") == "b24");
  CHECK(second.at("check").at("reference") == "stored (decoded) matrix");
}

TEST_CASE("spmm_run --layout and --reorder: every policy is checked, reported and survives a .b24 round trip", "[app]") {
  TempDir dir;
  const std::string matrix = dir.file("known.mtx");
  write_text(matrix, known_census_mtx());
  for (const std::string layout : {"aligned", "condensed", "auto"})
    for (const std::string reorder : {"none", "rcm", "auto"}) {
      CAPTURE(layout, reorder);
      const std::string saved = dir.file("known_" + layout + "_" + reorder + ".b24");
      const json first = parse_json(run_spmm(dir, "'" + matrix + "' --cpu-only --json --n 9 --layout " + layout +
                                                      " --reorder " + reorder + " --save '" + saved + "'"));
      check_cpu_result(first);
      const json& chosen = first.at("layout");
      if (layout != "auto") CHECK(chosen.at("layout") == layout);
      if (reorder == "none") CHECK(chosen.at("reordering") == "none");
      CHECK(chosen.at("baseline_stored_tiles") == 4);  // the thesis layout of this matrix (check_known_census)
      CHECK(chosen.at("stored_tiles") == first.at("census").at("stored_tiles"));
      CHECK(first.at("census").at("layout") == chosen.at("layout"));
      const json second = parse_json(run_spmm(dir, "'" + saved + "' --cpu-only --json --n 9"));
      check_cpu_result(second);
      CHECK(second.at("census") == first.at("census"));
      CHECK(second.at("layout").at("layout") == chosen.at("layout"));
    }
  const AppRun human = run_spmm(dir, "'" + matrix + "' --cpu-only --n 8 --layout condensed");
  REQUIRE(human.exit_code == 0);
  CHECK(human.out.find("layout      condensed") != std::string::npos);
  CHECK(human.out.find("before (aligned, file order): 4 tiles") != std::string::npos);
  const AppRun bad = run_spmm(dir, "'" + matrix + "' --cpu-only --layout diagonal");
  CHECK(bad.exit_code == 2);
}

TEST_CASE("spmm_run checks a random sample of rows when the full reference exceeds the memory limit", "[app]") {
  TempDir dir;
  const std::string matrix = std::string(BCSR24_TEST_DATA_DIR) + "/xdys_1000x1000_2d3s.mtx";
  // 1.3 MiB for the full reference against a limit of 0.5 MiB: 100 rows are checked instead, with beta != 0 so
  // that C0 has to be taken from the sampled rows too.
  const json sampled = parse_json(run_spmm(dir, "'" + matrix + "' --cpu-only --json --n 13 --beta 0.5 --check-limit-gib 0.0005 --check-rows 100"));
  CHECK(sampled.at("check").at("sampled_rows") == 100);
  CHECK(sampled.at("check").at("full_reference_bytes").get<double>() > 0.0005 * 1024 * 1024 * 1024);
  CHECK(sampled.at("check").at("sample_reason").get<std::string>().find("--check-limit-gib") != std::string::npos);
  check_cpu_result(sampled);
  // The same product checked in full gives an error of the same size (the sample is of the same population).
  const json full = parse_json(run_spmm(dir, "'" + matrix + "' --cpu-only --json --n 13 --beta 0.5"));
  CHECK_FALSE(full.at("check").contains("sampled_rows"));
  check_cpu_result(full);
  const double sampled_error = sampled.at("results").at(0).at("rel_error").get<double>();
  const double full_error = full.at("results").at(0).at("rel_error").get<double>();
  CHECK(sampled_error < 3.0 * full_error);
  CHECK(sampled_error > full_error / 3.0);
  // A limit that even the sample exceeds skips the check and says why.
  const json skipped = parse_json(run_spmm(dir, "'" + matrix + "' --cpu-only --json --n 13 --check-limit-gib 0.0000001"));
  CHECK(skipped.at("check").at("skipped_reason").get<std::string>().find("sampled rows") != std::string::npos);
}

TEST_CASE("spmm_run generates synthetic XdYs matrices", "[app]") {
  TempDir dir;
  SECTION("only 2:4 tiles") {
    const json report = parse_json(run_spmm(dir, "--xdys 0d10s --size 256 --cpu-only --json --n 8"));
    CHECK(report.at("census").at("dense_tiles") == 0);
    CHECK(report.at("census").at("sparse24_tiles").get<int>() > 0);
    CHECK(report.at("census").at("sparse24_share").get<double>() == Approx(1.0));
    check_cpu_result(report);
  }
  SECTION("only dense tiles") {
    const json report = parse_json(run_spmm(dir, "--xdys 10d0s --size 256 --cpu-only --json --n 8"));
    CHECK(report.at("census").at("sparse24_tiles") == 0);
    CHECK(report.at("census").at("dense_tiles").get<int>() > 0);
    check_cpu_result(report);
  }
  SECTION("a bad name is an error naming it") {
    const AppRun run = run_spmm(dir, "--xdys tenpercent --size 256 --cpu-only");
    CHECK(run.exit_code != 0);
    require_one_error_line(run);
  }
}

TEST_CASE("spmm_run generates 3-D mesh matrices with --mesh", "[app][mesh]") {
  TempDir dir;
  SECTION("lexicographic and random node order, same size, checked on the CPU path") {
    for (const std::string order : {"lex", "random"}) {
      INFO("order " << order);
      const json report = parse_json(run_spmm(dir, "--mesh 6x5x4,dofs=2,order=" + order + " --cpu-only --json --n 8"));
      const json& matrix = report.at("matrix");
      CHECK(matrix.at("name") == "mesh6x5x4_d2_s27_" + order);
      CHECK(matrix.at("source") == "synthetic");
      CHECK(matrix.at("rows") == 240);
      CHECK(matrix.at("cols") == 240);
      // 27-point: (3n - 2) neighbour pairs per axis, 2 x 2 blocks: 16 * 13 * 10 * 4.
      CHECK(matrix.at("entries_with_explicit_zeros") == 8320);
      CHECK(matrix.at("dofs_per_node") == 2);
      CHECK(matrix.at("stencil") == 27);
      CHECK(matrix.at("node_order") == (order == "lex" ? "lexicographic" : "random"));
      CHECK(report.at("preprocessing").at("generate_s").get<double>() >= 0.0);
      check_cpu_result(report);
    }
  }
  SECTION("human output names the mesh") {
    const AppRun run = run_spmm(dir, "--mesh 6x5x4,dofs=2 --cpu-only --n 8");
    REQUIRE(run.exit_code == 0);
    CHECK(run.out.find("mesh6x5x4_d2_s27_lex (3-D mesh)") != std::string::npos);
  }
  SECTION("a bad spec, or --mesh with another input, is a usage error (exit 2) with one line") {
    const std::string matrix = dir.file("known.mtx");
    write_text(matrix, known_census_mtx());
    const std::vector<std::pair<std::string, std::string>> bad = {
        {"--mesh 6x5 --cpu-only", "6x5"},
        {"--mesh 6x5x0,dofs=2 --cpu-only", "NZ"},
        {"--mesh 6x5x4,dofs=two --cpu-only", "dofs"},
        {"--mesh 6x5x4,stencil=9 --cpu-only", "stencil"},
        {"--mesh 6x5x4,order=sorted --cpu-only", "order"},
        {"--mesh 6x5x4,colour=red --cpu-only", "colour"},
        {"--mesh 6x5x4 --xdys 10d5s --cpu-only", "xdys"},
        {"'" + matrix + "' --mesh 6x5x4 --cpu-only", "--mesh"},
    };
    for (const auto& [arguments, named] : bad) {
      INFO("arguments: " << arguments);
      const AppRun run = run_spmm(dir, arguments);
      CHECK(run.exit_code == 2);
      require_one_error_line(run);
      CHECK(run.err.find(named) != std::string::npos);
      CHECK(run.out.empty());
    }
  }
}

TEST_CASE("spmm_run check switches: --no-check and the memory limit", "[app]") {
  TempDir dir;
  const std::string matrix = dir.file("known.mtx");
  write_text(matrix, known_census_mtx());
  const json unchecked = parse_json(run_spmm(dir, "'" + matrix + "' --cpu-only --json --no-check"));
  CHECK(unchecked.at("check").at("enabled") == false);
  CHECK(unchecked.at("results").at(0).at("rel_error").is_null());

  const json over_limit = parse_json(run_spmm(dir, "'" + matrix + "' --cpu-only --json --check-limit-gib 1e-9"));
  CHECK(over_limit.at("check").contains("skipped_reason"));
  CHECK(over_limit.at("results").at(0).at("rel_error").is_null());
  const AppRun human = run_spmm(dir, "'" + matrix + "' --cpu-only --check-limit-gib 1e-9");
  CHECK(human.exit_code == 0);
  CHECK(human.out.find("skipped: the fp64 reference needs") != std::string::npos);
}

TEST_CASE("spmm_run fp16 range: automatic scaling, and --scaling none failing with a message", "[app]") {
  TempDir dir;
  const std::string matrix = dir.file("large_values.mtx");
  write_text(matrix,
             "%%MatrixMarket matrix coordinate real general\n20 40 4\n1 1 1e6\n2 5 -3e5\n17 33 2.5e6\n20 40 1\n");
  // Default: one power-of-two exponent per row, so each row's largest magnitude lands just under 2^15.
  const json per_row = parse_json(run_spmm(dir, "'" + matrix + "' --cpu-only --json"));
  CHECK(per_row.at("scaling").at("per_row") == true);
  CHECK(per_row.at("scaling").at("max_row_exponent").get<int>() == 7);  // 2.5e6 = 1.19 * 2^21: 2^21 / 2^7 = 2^14
  CHECK(per_row.at("scaling").at("min_row_exponent").get<int>() == -14);  // 1 * 2^14
  CHECK(per_row.at("scaling").at("flushed_count") == 0);
  check_cpu_result(per_row);
  // --scaling auto: one exponent for the whole matrix.
  const json scaled = parse_json(run_spmm(dir, "'" + matrix + "' --cpu-only --json --scaling auto"));
  CHECK(scaled.at("scaling").at("per_row") == false);
  CHECK(scaled.at("scaling").at("scaled") == true);
  CHECK(scaled.at("scaling").at("exponent") != 0);
  CHECK(scaled.at("scaling").at("overflow_count").get<int>() >= 3);
  check_cpu_result(scaled);

  const AppRun refused = run_spmm(dir, "'" + matrix + "' --cpu-only --scaling none");
  CHECK(refused.exit_code == 1);
  require_one_error_line(refused);
}

TEST_CASE("spmm_run pattern files take ones or seeded random values", "[app]") {
  TempDir dir;
  const std::string matrix = dir.file("pattern.mtx");
  write_text(matrix, "%%MatrixMarket matrix coordinate pattern symmetric\n33 33 4\n1 1\n2 1\n33 2\n20 20\n");
  const json ones = parse_json(run_spmm(dir, "'" + matrix + "' --cpu-only --json"));
  CHECK(ones.at("matrix").at("nnz") == 6);  // symmetric expansion of the 2 off-diagonal entries
  CHECK(ones.at("scaling").at("max_abs") == 1.0);
  check_cpu_result(ones);
  const json random = parse_json(run_spmm(dir, "'" + matrix + "' --cpu-only --json --pattern-values random"));
  CHECK(random.at("scaling").at("max_abs").get<double>() < 1.0);
  check_cpu_result(random);
}

TEST_CASE("spmm_run runs the project's bundled matrices on the CPU path", "[app][data]") {
  const fs::path data_dir(BCSR24_TEST_DATA_DIR);
  REQUIRE(fs::is_directory(data_dir));  // the project's own data/ folder is part of the repository
  TempDir dir;
  int matrices = 0;
  for (const auto& entry : fs::directory_iterator(data_dir)) {
    const std::string name = entry.path().filename().string();
    // Keep CI fast: the small ones are enough to exercise the reader, the conversion and the check.
    if (entry.path().extension() != ".mtx" || entry.file_size() > (1u << 20)) continue;
    INFO("matrix " << name);
    const json report = parse_json(run_spmm(dir, "'" + entry.path().string() + "' --cpu-only --json --n 8"));
    CHECK(report.at("census").at("nnz") == report.at("matrix").at("nnz"));
    if (report.at("matrix").at("nnz").get<std::int64_t>() > 0) check_cpu_result(report);
    ++matrices;
  }
  INFO("no .mtx under 1 MiB in " << data_dir);
  REQUIRE(matrices > 0);
}
